"""Regenerate the committed protobuf and gRPC code from proto/ (the one way to do it).

    python scripts/gen_proto.py          # rewrite jackpot/v1/*_pb2*.py{,i}
    python scripts/gen_proto.py --check  # exit 1 if the committed code is stale

The generated package is ``jackpot.v1`` (the proto package), at the top of the repository,
with mypy-protobuf stubs beside it. grpcio-tools is pinned to the runtime grpcio release.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
PACKAGE = Path("jackpot") / "v1"
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi")


def generate(out_dir: Path) -> list[Path]:
    """Run protoc for every .proto under proto/jackpot/v1 into ``out_dir``; return the files."""
    protos = sorted((PROTO_ROOT / PACKAGE).glob("*.proto"))
    bin_dir = Path(sys.executable).parent  # mypy-protobuf's plugins sit beside this python
    command = [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"--plugin=protoc-gen-mypy={bin_dir / 'protoc-gen-mypy'}",
        f"--plugin=protoc-gen-mypy_grpc={bin_dir / 'protoc-gen-mypy_grpc'}",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        f"--mypy_out={out_dir}",
        f"--mypy_grpc_out={out_dir}",
        *(str(proto.relative_to(PROTO_ROOT)) for proto in protos),
    ]
    subprocess.run(command, check=True, cwd=PROTO_ROOT)
    return sorted(p for p in (out_dir / PACKAGE).iterdir() if p.name.endswith(GENERATED_SUFFIXES))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if committed code is stale")
    args = parser.parse_args()
    target = ROOT / PACKAGE
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(Path(tmp))
        committed = sorted(p for p in target.glob("*") if p.name.endswith(GENERATED_SUFFIXES))
        if args.check:
            stale = [
                p.name
                for p in fresh
                if not (target / p.name).exists()
                or not filecmp.cmp(p, target / p.name, shallow=False)
            ]
            extra = sorted({p.name for p in committed} - {p.name for p in fresh})
            if stale or extra:
                print(
                    f"generated protobuf code is stale: {stale + extra}; "
                    "run: python scripts/gen_proto.py",
                    file=sys.stderr,
                )
                return 1
            print("generated protobuf code is up to date")
            return 0
        for old in committed:
            old.unlink()
        for path in fresh:
            shutil.copy(path, target / path.name)
        print(f"wrote {len(fresh)} files to {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
