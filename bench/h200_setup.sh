# Sourced by the bench/h200_*.sh scripts on a lent H200 host, in the second of two `device` calls
# (DESIGN.md §8): joins the carried CuTe DSL wheels (~/stash/part_aa from the first call, .dev/part_ab
# from this one) and installs them into /tmp/site. Then `install_zerojit DIR` installs this checkout
# into DIR; "$DSL" is the PYTHONPATH part that finds the DSLs. Runs from the repo root.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cat ~/stash/part_aa .dev/part_ab > /tmp/wheels.tar && mkdir -p /tmp/wh && tar xf /tmp/wheels.tar -C /tmp/wh || exit 3
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site /tmp/wh/*.whl || exit 4
DSL=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
export PYTHONUNBUFFERED=1

install_zerojit() {
  python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target "$1" . || exit 5
}
