"""The installed llama.cpp runs on any x86-64 host (issue 27).

llama.cpp builds for the build host's CPU by default; a wheel built on a host with AVX-512 or
AMX dies with SIGILL (exit 132) on the first completion on a host without them, and pip's
wheel cache carries the wheel between machines. scripts/setup.sh builds it for a portable
baseline (AVX2, FMA, F16C). This test reads what the installed build was compiled for, and, when
objdump is there, looks for AVX-512 (zmm registers) and AMX (tile) instructions in its libraries.
"""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.llm
# AMX's instructions: tile configuration, loads, stores and the dot products.
AVX512_OR_AMX = re.compile(r"%zmm\d|\bzmm\d|\b(?:ldtilecfg|sttilecfg|tileloadd\w*|tilestored|tilezero|tdpb\w+|tdpfp16ps)\b")


def compiled_features() -> dict[str, bool]:
    llama_cpp = pytest.importorskip("llama_cpp", reason="install the 'llm' extra: bash scripts/setup.sh dev,llm")
    info = llama_cpp.llama_print_system_info().decode()
    return {name: value == "1" for name, value in re.findall(r"(\w+) = (\d)", info)}


def test_llama_cpp_reports_no_avx512_or_amx_compiled_in():
    features = compiled_features()
    assert features, "llama_print_system_info() listed no CPU features"
    offending = sorted(name for name, on in features.items() if on and name.startswith(("AVX512", "AMX")))
    assert not offending, (f"llama.cpp was built with {', '.join(offending)}: it dies with SIGILL on hosts without "
                           "them; rebuild it portable (bash scripts/setup.sh dev,llm)")
    if platform.machine() in ("x86_64", "AMD64"):
        assert features.get("AVX2"), "the portable baseline keeps AVX2"


def test_llama_cpp_libraries_hold_no_avx512_or_amx_instructions():
    llama_cpp = pytest.importorskip("llama_cpp", reason="install the 'llm' extra: bash scripts/setup.sh dev,llm")
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("AVX-512 and AMX are x86-64 instructions")
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump (binutils) is not installed; the features llama.cpp reports are checked above")
    libraries = sorted(path for path in (Path(llama_cpp.__file__).parent / "lib").glob("*.so")
                       if not path.is_symlink())
    assert libraries, "llama_cpp ships its shared libraries in llama_cpp/lib"
    for library in libraries:
        found = 0
        example = ""
        with subprocess.Popen([objdump, "-d", "--no-show-raw-insn", str(library)], stdout=subprocess.PIPE,
                              text=True, errors="replace") as process:
            for line in process.stdout:
                if AVX512_OR_AMX.search(line):
                    found += 1
                    example = example or line.strip()
        assert found == 0, f"{library.name}: {found} AVX-512/AMX instructions, e.g. {example!r}"
