"""The built-in migration specs, one per kernel family (each lives in its family's room)."""

from __future__ import annotations

from codemods.spec import MigrationSpec


def builtin_specs() -> dict[str, MigrationSpec]:
    from .fa4_mla_prefill.spec import SPEC as fa4
    from .inkling_rel_attention.spec import SPEC as inkling
    from .rocm_nvfp4.spec import SPEC as rocm

    return {spec.family: spec for spec in (fa4, inkling, rocm)}
