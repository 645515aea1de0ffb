# install rules (being written)
