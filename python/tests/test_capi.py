"""The hand-written ctypes declarations against include/nwattn.h, so that they cannot drift:
every exported function is declared with the right number and kind of arguments, the enum
values and struct fields match."""
import ctypes
import pathlib
import re

import pytest

import nwattn
from nwattn import _capi

HEADER = pathlib.Path(__file__).resolve().parents[2] / "include" / "nwattn.h"
pytestmark = pytest.mark.skipif(not HEADER.is_file(), reason="needs the source tree's header")


def header_text():
    text = HEADER.read_text()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def prototypes():
    found = {}
    for ret, name, params in re.findall(
            r"NWATTN_API\s+([\w\s\*]+?)\s*\b(nwattn_\w+)\s*\(([^)]*)\)\s*;", header_text()):
        params = " ".join(params.split())
        found[name] = (ret.strip(), [] if params in ("", "void") else
                       [p.strip() for p in params.split(",")])
    return found


def kind_of_c(decl):
    if "*" in decl:
        return "pointer"
    if re.search(r"\bsize_t\b", decl):
        return "size_t"
    if re.search(r"\buint64_t\b", decl):
        # ctypes has one type for both where they are the same size (every 64-bit platform)
        return "size_t" if ctypes.c_uint64 is ctypes.c_size_t else "uint64"
    if re.search(r"\bdouble\b", decl):
        return "double"
    if re.search(r"\bunsigned\b", decl):
        return "unsigned"
    if re.search(r"\bfloat\b", decl):
        return "float"
    if re.search(r"\b(nwattn_\w+|int)\b", decl):  # the status and the other enums
        return "int"
    if decl == "void":
        return "void"
    raise AssertionError(f"unexpected C type {decl!r}")


def kind_of_ctypes(t):
    if t is None:
        return "void"
    if t in (ctypes.c_void_p, ctypes.c_char_p) or issubclass(t, ctypes._Pointer):
        return "pointer"
    kinds = {ctypes.c_uint64: "uint64", ctypes.c_size_t: "size_t",  # the same type on LP64
             ctypes.c_uint: "unsigned", ctypes.c_float: "float", ctypes.c_int: "int",
             ctypes.c_double: "double"}
    return kinds[t]


def test_every_exported_function_is_declared():
    assert set(prototypes()) == set(_capi.PROTOTYPES)


@pytest.mark.parametrize("name", sorted(_capi.PROTOTYPES))
def test_declaration_matches_header(name):
    ret, params = prototypes()[name]
    restype, argtypes = _capi.PROTOTYPES[name]
    assert kind_of_ctypes(restype) == kind_of_c(ret)
    assert [kind_of_ctypes(t) for t in argtypes] == [kind_of_c(p) for p in params]


def enum_values(prefix):
    values = {}
    for name, expr in re.findall(r"\b" + prefix + r"(\w+)\s*=\s*([^,\n}]+)", header_text()):
        values[name] = eval(expr.replace("u <<", " <<"))  # 0, 12, 1u << 2
    return values


@pytest.mark.parametrize("prefix, enum", [
    ("NWATTN_ERR_", {k[4:]: v for k, v in nwattn.Status.__members__.items() if k != "OK"}),
    ("NWATTN_BACKEND_", nwattn.Backend.__members__),
    ("NWATTN_SCORE_", nwattn.ScoreKind.__members__),
    ("NWATTN_MASK_", nwattn.MaskFlag.__members__),
    ("NWATTN_KERNEL_", nwattn.Kernel.__members__),
    ("NWATTN_LOCAL_", {k[6:]: v for k, v in nwattn.Degree.__members__.items()}),
    ("NWATTN_EMPTY_", nwattn.Empty.__members__),
    ("NWATTN_ROW_", nwattn.RowFlag.__members__),
    ("NWATTN_RULE_", nwattn.BandwidthRule.__members__),
    ("NWATTN_DATASET_", nwattn.Dataset.__members__),
    ("NWATTN_VARIANCE_", nwattn.Variance.__members__),
])
def test_enum_values_match_header(prefix, enum):
    assert enum_values(prefix) == {k: int(v) for k, v in enum.items()}


def struct_fields(name):
    body = re.search(r"typedef struct " + name + r"\s*\{(.*?)\}\s*" + name + ";", header_text(),
                     re.S).group(1)
    fields = []
    for decl in body.split(";"):
        decl = " ".join(decl.split())
        if not decl:
            continue
        fp = re.match(r".*\(\s*\*\s*(\w+)\)\s*\(", decl)  # a function pointer field
        if fp:
            fields.append(fp.group(1))
            continue
        first, *rest = decl.split(",")
        fields.append(first.split()[-1].lstrip("*"))
        fields.extend(r.strip().lstrip("*") for r in rest)
    return fields


@pytest.mark.parametrize("name, struct", [("nwattn_score", _capi.Score),
                                          ("nwattn_mask", _capi.Mask),
                                          ("nwattn_allocator", _capi.Allocator),
                                          ("nwattn_pool_state", _capi.PoolState),
                                          ("nwattn_attention_params", _capi.AttentionParams),
                                          ("nwattn_regression", _capi.Regression),
                                          ("nwattn_cv_options", _capi.CvOptions),
                                          ("nwattn_cv_report", _capi.CvReport),
                                          ("nwattn_sgd", _capi.Sgd),
                                          ("nwattn_rng", _capi.Rng),
                                          ("nwattn_fit_summary", nwattn._stats._FitSummary),
                                          ("nwattn_pool_upstream", _capi.PoolUpstream),
                                          ("nwattn_pool_grads", _capi.PoolGrads),
                                          ("nwattn_attention_grads", _capi.AttentionGrads)])
def test_struct_fields_match_header(name, struct):
    assert struct_fields(name) == [f[0] for f in struct._fields_]


def test_package_version_matches_header():
    major, minor, patch = (int(re.search(rf"#define NWATTN_VERSION_{p} (\d+)",
                                         HEADER.read_text()).group(1))
                           for p in ("MAJOR", "MINOR", "PATCH"))
    assert nwattn.__version__ == f"{major}.{minor}.{patch}"
    assert nwattn.version_number() == major * 10000 + minor * 100 + patch
    assert nwattn.version() == nwattn.__version__


def test_max_threads_matches_header():
    value = re.search(r"#define NWATTN_MAX_THREADS (\d+)", HEADER.read_text()).group(1)
    assert nwattn.MAX_THREADS == int(value)
