"""Curated mutants: break the product on purpose, one change at a time, and see the tests that should fail, fail.

Each mutant is one exact text replacement in one file (refused if the text is not there
exactly once, so a refactor that moves the code shows up here) and the tests meant to kill
it. The file is restored whatever happens. Exit 1 if any mutant survives. Each mutant's tests
run against a private copy of the cached engine trees ($ZEROJIT_CACHE): the codemod tests
hard-link those trees, and a mutant that writes in place would write through to the cache.

    make mutants                        # all of them
    .venv/bin/python tests/mutants.py --list
    .venv/bin/python tests/mutants.py -k topk   # those whose name contains "topk"
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from zerojit.contract.storage import cache_root

ROOT = Path(__file__).resolve().parents[1]
CACHE = cache_root()


@dataclasses.dataclass(frozen=True)
class Mutant:
    name: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]  # pytest arguments (node ids, -k expressions)


K = "tests/test_key_equivalence.py"
MUTANTS = (
    # Key logic of each family.
    Mutant(
        "fa4: non-causal probes dropped",
        "migrate/fa4_mla_prefill/kernel.py",
        'Choice("causal", (False, True))',
        'Choice("causal", (True,))',
        (K, "-k", "fa4 and full_grid"),
    ),
    Mutant(
        "fa4: sm110 defaults to FA4 again",
        "migrate/fa4_mla_prefill/kernel.py",
        "version = forced or {9: 3, 10: 4}.get(major, 2)",
        "version = forced or {9: 3, 10: 4, 11: 4}.get(major, 2)",
        ("tests/test_fa4_keys.py", "-k", "vllms_own_decision"),
    ),
    Mutant(
        "fa4: Sq = 257 probes dropped",
        "migrate/fa4_mla_prefill/kernel.py",
        "    (MULTI_BLOCK_Q, 4 * K_TILE),\n    (MULTI_BLOCK_Q, VERY_LONG_K),\n",
        "",
        (K, "-k", "fa4 and full_grid"),
    ),
    Mutant(
        "inkling: KV dtype ignores the serving dtype",
        "migrate/inkling_rel_attention/kernel.py",
        '"kv_dtype": model.kv_dtype or limits.dtype',
        '"kv_dtype": model.kv_dtype or "bf16"',
        (K, "-k", "the_legacy_side_is_vllm_029_itself and inkling"),
    ),
    Mutant(
        "inkling: large-batch bound moved",
        "migrate/inkling_rel_attention/kernel.py",
        "LARGE_NUM_REQS = 1024 ",
        "LARGE_NUM_REQS = 1000 ",
        (K, "-k", "inkling and full_grid"),
    ),
    Mutant(
        "rocm: large index prefill bound 12288 -> 10000",
        "migrate/rocm_nvfp4/kernel.py",
        "index_prefill_shared_max_tokens: int = 12288",
        "index_prefill_shared_max_tokens: int = 10000",
        ("tests/test_rocm_keys.py",),
    ),
    Mutant(
        "rocm: top-k strip 4096 -> 4100",
        "migrate/rocm_nvfp4/kernel.py",
        "topk_strip_tokens: int = 4096",
        "topk_strip_tokens: int = 4100",
        ("tests/test_rocm_keys.py",),
    ),
    Mutant(
        "rocm: registration gate breaks at TP >= 4",
        "migrate/rocm_nvfp4/model.py",
        "if self.launchers and limits.enable_jit_warmup:",
        "if self.launchers and limits.enable_jit_warmup and limits.tp_size < 4:",
        (K, "-k", "rocm and full_grid"),
    ),
    Mutant(
        "fa4: registration gate ignores the JIT switch",
        "migrate/fa4_mla_prefill/model.py",
        "if limits.enable_jit_warmup and self.fa_version == 4:",
        "if self.fa_version == 4:",
        (K, "-k", "fa4 and full_grid"),
    ),
    Mutant(
        "fla: rows per program from one program per SM",
        "migrate/fla_layer_norm/kernel.py",
        "programs_per_sm_pair = -(-num_rows // (2 * self.num_sms))",
        "programs_per_sm_pair = -(-num_rows // self.num_sms)",
        ("tests/test_triton_family.py", "-k", "every_launch"),
    ),  # the key *sets* still match: per launch
    Mutant(
        "triton: multiples of 8 taken for Triton's divisible class",
        "contract/backends/triton.py",
        'return "div16" if value % 16 == 0 else "any"',
        'return "div16" if value % 8 == 0 else "any"',
        ("tests/test_triton_family.py", "-k", "specializations"),
    ),
    Mutant(
        "turboquant: block table not padded to whole 128-token runs",
        "migrate/flydsl_turboquant_decode/kernel.py",
        "alignment = TOKEN_ALIGNMENT // math.gcd(TOKEN_ALIGNMENT, block_size)",
        "alignment = 1",
        ("tests/test_turboquant_family.py", "-k", "engines_own"),
    ),
    Mutant(
        "turboquant: tile groups not rounded to a power of two",
        "migrate/flydsl_turboquant_decode/kernel.py",
        "next_power_of_two(max(1, -(-required // num_partitions)))",
        "max(1, -(-required // num_partitions))",
        ("tests/test_turboquant_family.py", "-k", "rules or engines_own"),
    ),
    Mutant(
        "turboquant: the FlyDSL variant built from the rounded scale",
        "migrate/flydsl_turboquant_decode/kernel.py",
        "key.max_blocks_per_seq,\n            key.softmax_scale,",
        "key.max_blocks_per_seq,\n            key.scale,",
        ("tests/test_turboquant_family.py", "-k", "cold_warmup"),
    ),
    Mutant(
        "turboquant: the workspace holding the output taken to be under 2 GB",
        "migrate/flydsl_turboquant_decode/kernel.py",
        'Choice("workspace_within_2gb", (True, False))',
        'Choice("workspace_within_2gb", (True,))',
        ("tests/test_turboquant_family.py", "-k", "rules"),
    ),
    Mutant(
        "triton: AMD buffers not known to be within 2 GB",
        "contract/backends/triton.py",
        "        return 0 if self.within_2gb else 1 << 31",
        "        return 1 << 31",
        ("tests/test_turboquant_family.py", "-k", "cold_warmup"),
    ),
    # Backends, registry, executor, verifier, monitors.
    Mutant(
        "triton: disk-cache loads counted as compiles",
        "contract/backends/triton.py",
        "    if not cache_hit:\n",
        "    if True:\n",
        ("tests/test_triton_family.py", "-k", "preset"),
    ),
    Mutant(
        "flydsl: empty-kernel check skipped on cache hits",
        "contract/backends/flydsl.py",
        "    if not sizes or min(sizes.values()) < MIN_KERNEL_BYTES:",
        "    if outcome is Outcome.COMPILED and (not sizes or min(sizes.values()) < MIN_KERNEL_BYTES):",
        ("tests/test_rocm_compile.py", "-k", "empty"),
    ),
    Mutant(
        "monitor: switched off",
        "contract/monitor.py",
        '    """Called by the compile hooks; a no-op unless a monitor is armed."""\n    if not _armed:',
        '    """Called by the compile hooks; a no-op unless a monitor is armed."""\n    if True:',
        ("tests/test_rocm_compile.py", "-k", "mutant"),
    ),
    Mutant(
        "registry: no dedup",
        "contract/registry.py",
        "        if any(registration.same_as(existing) for existing in self.registrations):",
        "        if False:",
        ("tests/test_registry_and_executor.py",),
    ),
    Mutant(
        "executor: every key compiles its variant again",
        "contract/executor.py",
        "        if (kernel.backend, variant) not in chosen and not cached:",
        "        variant = key.digest()\n        if (kernel.backend, variant) not in chosen and not cached:",
        ("tests/test_registry_and_executor.py", "-k", "one_key_per_backend_variant"),
    ),
    Mutant(
        "workers: no time slicing (every process in flight compiles at once)",
        "contract/workers.py",
        "            elif position >= self.running and worker not in self.stopped:",
        "            elif False:",
        ("tests/test_workers.py", "-k", "share"),
    ),
    Mutant(
        "workers: the turn never rotates (the first `running` compile to the end)",
        "contract/workers.py",
        "            self.order.rotate(-(len(self.order) - self.running))",
        "            pass",
        ("tests/test_workers.py", "-k", "share"),
    ),
    Mutant(
        "workers: none starts in place of one that died",
        "contract/workers.py",
        "            self.processes -= 1\n        self.grow(replace)",
        "            self.processes -= 1",
        ("tests/test_workers.py", "-k", "dies"),
    ),
    Mutant(
        "workers: a task that raises ends its worker",
        "contract/workers.py",
        "        except BaseException as exc:  # noqa: BLE001 - the task's failure, not the worker's",
        "        except ZeroDivisionError as exc:",
        ("tests/test_workers.py", "-k", "raises"),
    ),
    Mutant(
        "workers: they outlive a killed parent (no parent-death signal)",
        "contract/workers.py",
        "        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG",
        "        return",
        ("tests/test_workers.py", "-k", "killed_parent"),
    ),
    Mutant(
        "workers: a cancel leaves them running",
        "contract/workers.py",
        "        self._stopping.set()\n\n    def close",
        "        pass\n\n    def close",
        ("tests/test_workers.py", "-k", "cancelled"),
    ),
    Mutant(
        "executor: variants workers resolve are not deduplicated",
        "contract/executor.py",
        "        resolved += [(key.digest(), False) for _, key in part] if isinstance(answer, Exception) else answer",
        "        resolved += [(key.digest(), False) for _, key in part]",
        ("tests/test_registry_and_executor.py", "-k", "early"),
    ),
    Mutant(
        "verifier: growth never counted",
        "contract/coverage.py",
        "return sum(k.variants_after - k.variants_before for k in self.kernels)",
        "return 0",
        ("tests/test_registry_and_executor.py", "-k", "verification"),
    ),
    Mutant(
        "cache: swapped artifacts pass the manifest",
        "contract/cache.py",
        "            elif file_digest(path) != digest:",
        "            elif False:",
        ("tests/test_cli_bad_input.py", "tests/test_bake.py"),
    ),
    # Equivalence and the engine-tree runner.
    Mutant(
        "equivalence: a superset counts as equal",
        "migrate/engine_trees/equivalence.py",
        "    if legacy == migrated:",
        "    if legacy <= migrated:",
        (K, "-k", "broken or intended"),
    ),
    Mutant(
        "engine run: gates ignored",
        "migrate/engine_trees/warmup.py",
        'return all(bool(self._evaluate(g.test, site, scope, "the gate")) == g.holds_when for g in site.gates)',
        "return True",
        (K, "-k", "broken_gate or legacy_side"),
    ),
    Mutant(
        "engine run: `if ...: return` before a call ignored",
        "codemods/repo.py",
        "                if exits(statement.body) and not statement.orelse:",
        "                if False:",
        ("tests/test_engine_warmup.py",),
    ),
    Mutant(
        "engine sources: a names-only value decides silently",
        "migrate/engine_trees/sources.py",
        '    __bool__ = _refuse("truth value")',
        "    __bool__ = lambda self: True",
        ("tests/test_engine_warmup.py",),
    ),
    Mutant(
        "fa4 rules: sm90 unsplit keeps the split-only probes",
        "migrate/fa4_mla_prefill/equivalence.py",
        "for key in legacy if key.max_seqlen_k < SPLIT_ONLY_K}",
        "for key in legacy}",
        (K, "-k", "fa4 and full_grid"),
    ),
    # Trust: caches, bakes and journals received from elsewhere.
    Mutant(
        "cache: a manifest path outside the cache is followed",
        "contract/cache.py",
        "    return path if resolved != root and resolved.is_relative_to(root) else None",
        "    return path",
        ("tests/test_cache_trust.py", "-k", "outside"),
    ),
    Mutant(
        "cache: a corrupt manifest is rebuilt from what the cache holds",
        "contract/cache.py",
        "    if not manifest and (untrusted := backend_files(cache)):",
        "    if False:",
        ("tests/test_cache_trust.py", "-k", "vouches_for_nothing"),
    ),
    Mutant(
        "cache: a file no entry vouches for is blessed",
        "contract/cache.py",
        '            if result.outcome == "cached" and not peers_compile and not set(artifacts.items()) <= vouched:',
        "            if False:",
        ("tests/test_cache_trust.py", "-k", "never_blessed"),
    ),
    Mutant(
        "cache: subfolders escape the trust rule",
        "contract/cache.py",
        "            _check_entry(Path(folder, name), path)",
        "            pass",
        ("tests/test_cache_trust.py", "-k", "every_folder"),
    ),
    Mutant(
        "triton: a group file of another variant is followed",
        "contract/backends/triton_cache.py",
        'or group.get("variant") != self.key:',
        ":",
        ("tests/test_cache_trust.py", "-k", "swapped or own_variants"),
    ),
    Mutant(
        "journal: a journal for another repo is replayed",
        "codemods/transaction.py",
        'or not isinstance(data.get("repo"), str)\n        or Path(data["repo"]).resolve() != root\n',
        'or not isinstance(data.get("repo"), str)\n',
        ("tests/test_codemod_transactions.py", "-k", "hostile"),
    ),
    # Codemods.
    Mutant(
        "codemods: writes are not atomic",
        "codemods/transaction.py",
        '                os.replace(entry["temp"], write.path)',
        '                with open(write.path, "wb") as out:\n                    _pause()\n'
        "                    out.write(write.after)",
        ("tests/test_codemod_transactions.py", "-k", "kill"),
    ),
    Mutant(
        "codemods: output-compile check skipped",
        "codemods/gate.py",
        '        compile(after, str(path), "exec", dont_inherit=True)',
        "        pass",
        ("tests/test_codemod_transforms.py", "tests/test_codemod_variations.py"),
    ),
    Mutant(
        "jit map: a conditional registration's arms not followed",
        "codemods/jit_map.py",
        "    elif isinstance(receiver, ast.IfExp) and depth < 4:",
        "    elif False:",
        ("tests/test_jit_map.py", "-k", "small_engine"),
    ),
    Mutant(
        "jit map: device helpers counted as kernels",
        "codemods/jit_map.py",
        "if definition.device or not self._host_callable(module, definition):",
        "if definition.device:",
        ("tests/test_jit_map.py", "-k", "small_engine"),
    ),
    Mutant(
        "jit map: a dispatcher's kernel does not take its status",
        "codemods/jit_map.py",
        "                        if wrapped in kernels:",
        "                        if False:",
        ("tests/test_jit_map.py", "-k", "small_engine"),
    ),
    Mutant(
        "survey: orchestrator helpers not followed",
        "codemods/survey.py",
        "            if reached:  # a helper",
        "            if False:  # a helper",
        ("tests/test_survey.py",),
    ),
    Mutant(
        "migrate: a spec's confirm list ignored",
        "codemods/runner.py",
        "        if spec.confirm:",
        "        if False:",
        ("tests/test_survey.py", "-k", "draft"),
    ),
    Mutant(
        "codemods: a registration on a kernel off the contract goes through",
        "codemods/transforms/insert_registration.py",
        '    else:\n        raise SpecError(\n            f"{spec.family}: the registration calls',
        '    elif False:\n        raise SpecError(\n            f"{spec.family}: the registration calls',
        ("tests/test_codemod_variations.py", "-k", "plain_triton or off_the_contract"),
    ),
    Mutant(
        "codemods: the kernel class does not adopt the contract",
        "codemods/transforms/insert_registration.py",
        "        planner.add(cls_module, adopt)\n",
        "        pass\n",
        ("tests/test_vllm033_migrations.py", "-k", "router"),
    ),
    Mutant(
        "codemods: locals left unread by a removal are kept",
        "codemods/transforms/pipeline.py",
        "    unread = set(dead_locals(versions.wrapper(module))) - unread_before if removed else set()",
        "    unread = set()",
        ("tests/test_vllm033_migrations.py", "-k", "f821"),
    ),
    Mutant(
        "codemods: exporter strings not renamed",
        "codemods/transforms/rename_kernel.py",
        "        if self.in_exporter and value == self.op.old:",
        "        if False:",
        ("tests/test_codemod_repo.py", "tests/test_codemod_variations.py"),
    ),
    Mutant(
        "codemods: a name assigned from an import by string is not followed",
        "codemods/transforms/rename_kernel.py",
        "        for assignment in scope[node.value]:",
        "        for assignment in ():",
        ("tests/test_codemod_string_references.py", "-k", "renamed_and_resolve or another_value"),
    ),
    Mutant(
        "codemods: the gate misses a kernel looked up on an import by string",
        "codemods/gate.py",
        "        found += _looked_up_by_string(path, tree, bound, module, package, facts)\n",
        "        pass\n",
        ("tests/test_codemod_string_references.py", "-k", "gate_alone"),
    ),
    Mutant(
        "codemods: the outline is used where a function binds a global",
        "codemods/transforms/metadata.py",
        "    if _BINDS_OUTSIDE.search(code) or (unless is not None and unless.search(code)):",
        "    if unless is not None and unless.search(code):",
        ("tests/test_codemod_metadata.py", "-k", "global"),
    ),
    Mutant(
        "codemods: every import counts as referenced, so unused ones stay",
        "codemods/transforms/imports.py",
        "    bound = alias.evaluated_alias or alias.evaluated_name\n",
        "    return True\n    bound = alias.evaluated_alias or alias.evaluated_name\n",
        ("tests/test_codemod_transforms.py",),
    ),
    # The tree's own gates, every constructor path, the contract all of it.
    Mutant(
        "guards: a legacy guard the site can write is not carried",
        "codemods/transforms/insert_registration.py",
        "    carried = [a for a in legacy if not a.per_layer and not a.caught and a.canonical not in covered]",
        "    carried = []",
        ("tests/test_migration_gates.py", "-k", "own_orchestrator_gate or capability_gate"),
    ),
    Mutant(
        "guards: the config read through the asserting accessor",
        "codemods/guards.py",
        'parts.insert(0, f"(vllm_config := {_CONFIG_ACCESSORS[1]}()) is not None")',
        'parts.insert(0, f"(vllm_config := {_CONFIG_ACCESSORS[0]}()) is not None")',
        ("tests/test_migration_gates.py", "-k", "capability_gate"),
    ),
    Mutant(
        "guards: a written gate's extra condition is let through",
        "codemods/guards.py",
        '        if reason is not None:\n            differences.append(Difference("added", atom, reason))\n'
        "        else:\n            refusals.append(",
        '        if reason is not None:\n            differences.append(Difference("added", atom, reason))\n'
        "        elif False:\n            refusals.append(",
        ("tests/test_migration_gates.py", "-k", "written_gate"),
    ),
    Mutant(
        "paths: an early return before the registration is ignored",
        "codemods/transforms/insert_registration.py",
        "and any(isinstance(small, cst.Return) for small in s.body)\n            and lines[s].start.line < before\n",
        "and False\n",
        ("tests/test_migration_gates.py", "-k", "early_return"),
    ),
    Mutant(
        "paths: subclasses that replace the constructor are not looked for",
        "codemods/transforms/insert_registration.py",
        "in _replacing_subclasses(planner, modules, home.name, name, method)\n",
        "in []\n",
        ("tests/test_migration_gates.py", "-k", "subclass"),
    ),
    Mutant(
        "adoption: __init__ no longer runs the base's",
        "codemods/transforms/adopt_contract.py",
        '            if isinstance(member, cst.FunctionDef) and member.name.value == "__init__"\n            else member',
        '            if isinstance(member, cst.FunctionDef) and member.name.value == "__init__" and False\n            else member',
        ("tests/test_vllm033_migrations.py", "-k", "contract_path"),
    ),
    Mutant(
        "adoption: the tree's base initializer is not run over dispatch",
        "codemods/transforms/adopt_contract.py",
        "    why = probe_base_initializer(modules, base_module, base, cls_module, cls)\n",
        "    why = None\n",
        ("tests/test_codemod_variations.py", "-k", "dispatch_the_base"),
    ),
    Mutant(
        "leftovers: a public helper with no caller left goes unsaid",
        "codemods/leftovers.py",
        "        if uses - own == 0 and own <= 1 + _exported(modules, home, defined):",
        "        if False:",
        ("tests/test_migration_gates.py", "-k", "pr_body"),
    ),
    # Lifting plain Triton kernels (codemods.lift), caught in Triton's own keys.
    Mutant(
        "lift: the provider drops a loop's last value (the one multiple of 16)",
        "codemods/lift/provider.py",
        "domain = f\"WarmupChoices({', '.join(i.code for i in items)})\"",
        "domain = f\"WarmupChoices({', '.join(i.code for i in items[:-1])})\"",
        ("tests/test_triton_lifts.py", "-k", "tritons_own_keys and post"),
    ),
    Mutant(
        "lift: an early return's condition is kept instead of its negation",
        "codemods/lift/provider.py",
        "(statement.body, statement.orelse, negated_code(test.code)),",
        "(statement.body, statement.orelse, test.code),",
        ("tests/test_triton_lifts.py", "-k", "tritons_own_keys and post"),
    ),
    Mutant(
        "lift: an optional input is passed in the cases that leave it out",
        "codemods/lift/values.py",
        "        return MaybeTensor(test, body)\n",
        "        return MaybeTensor(Value(_negated(test.code)), body)\n",
        ("tests/test_triton_lifts.py", "-k", "tritons_own_keys and attn"),
    ),
    Mutant(
        "lift: what an early return guarded is evaluated where the guard fails",
        "codemods/lift/provider.py",
        "        conditions = [c for c in self.guards if names_in(c) & read]\n",
        "        conditions = []\n",
        ("tests/test_triton_lifts.py", "-k", "expands_to_no_case"),
    ),
    Mutant(
        "lift: a launcher's other kernel is left to lose its warmup with the step",
        "codemods/lift/plan.py",
        "        if is_triton_kernel(modules, launcher_module, node.value.id) and node.value.id not in together:\n",
        "        if False:\n",
        ("tests/test_lift_together.py", "-k", "alone_is_refused"),
    ),
    Mutant(
        "lift: the launcher keeps what only its lifted launches read",
        "codemods/lift/plan.py",
        "        launches.append(found)\n",
        "        pass\n",
        ("tests/test_lift_together.py", "-k", "only_the_two_launches_read"),
    ),
    Mutant(
        "lift: a slice of a registration value is written `a:b`, which vLLM's helper does not expand",
        "codemods/lift/evaluator.py",
        '[slice({bounds})]")',
        "[{bounds.replace(', ', ':')}]\")",
        ("tests/test_triton_lifts.py", "-k", "recurrent_kda"),
    ),
    Mutant(
        "lift: a view at an offset is written aligned",
        "codemods/lift/layout.py",
        "        offset = binary(ast.Add(), offset, binary(ast.Mult(), part, strides[dim]))\n",
        "        pass\n",
        ("tests/test_lift_views.py",),
    ),
    Mutant(
        "lift: a size-1 dimension keeps its own stride in a view",
        "codemods/lift/layout.py",
        '    return Value(f"{one.code} if {size.code} == 1 else {other.code}")\n',
        "    return other\n",
        ("tests/test_lift_views.py",),
    ),
    Mutant(
        "lift: a tensor the step allocates loses its dtype",
        "codemods/lift/evaluator.py",
        '        return self.plain(keywords["dtype"])\n',
        '        return Value("torch.float32")\n',
        ("tests/test_triton_lifts.py", "-k", "tritons_own_keys"),
    ),
    Mutant(
        "lift: the dispatcher leaves out the launcher's statements it needs",
        "codemods/transforms/lift_kernel.py",
        "                    copied[plan].append(statement)\n",
        "                    pass\n",
        ("tests/test_triton_lifts.py", "-k", "launches_what_it_did"),
    ),
    Mutant(
        "lift: a method the class only inherits is overridden without running the parent's",
        "codemods/transforms/insert_registration.py",
        ":\\n    super().{method}({', '.join(passed)})\\n\"",
        ':\\n    pass\\n"',
        ("tests/test_triton_lifts.py", "-k", "override_that_runs_the_parent"),
    ),
)


def _private_cache(folder: Path) -> Path:
    """A cache whose engine trees are real copies (wheels are only read, so they are linked)."""
    for part in ("wheels", "trees"):
        if (CACHE / part).is_dir():
            if part == "wheels":
                (folder / part).symlink_to(CACHE / part)
            else:
                shutil.copytree(CACHE / part, folder / part, symlinks=True)
    return folder


def run(mutant: Mutant, timeout: int) -> tuple[str, float, str]:
    path = ROOT / mutant.file
    original = path.read_text(encoding="utf-8")
    if original.count(mutant.old) != 1:
        return "STALE", 0.0, f"the text to mutate occurs {original.count(mutant.old)} times in {mutant.file}"
    mutated = original.replace(mutant.old, mutant.new)
    compile(mutated, str(path), "exec")  # a mutant must be valid code, or "killed" means nothing
    start = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="zerojit-mutant-cache-") as cache:
            path.write_text(mutated, encoding="utf-8")
            result = subprocess.run(
                [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *mutant.tests],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=timeout,
                env={**os.environ, "ZEROJIT_CACHE": str(_private_cache(Path(cache)))},
            )
        verdict = "killed" if result.returncode == 1 else ("SURVIVED" if result.returncode == 0 else "ERROR")
        tail = result.stdout.strip().splitlines()[-1:] if result.stdout.strip() else [result.stderr[-200:]]
    except subprocess.TimeoutExpired:
        verdict, tail = "ERROR", [f"timed out after {timeout} s"]
    finally:
        path.write_text(original, encoding="utf-8")
    return verdict, time.perf_counter() - start, tail[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", dest="match", default="", help="Only mutants whose name contains this text.")
    parser.add_argument("--list", action="store_true", help="List the mutants and their tests, run nothing.")
    parser.add_argument("--timeout", type=int, default=900, help="Seconds per mutant's test run.")
    args = parser.parse_args()
    chosen = [m for m in MUTANTS if args.match.lower() in m.name.lower()]
    if args.list:
        for mutant in chosen:
            print(f"{mutant.name:55} {mutant.file:42} pytest {' '.join(mutant.tests)}")
        return
    if not chosen:
        sys.exit(f"no mutant matches {args.match!r}")
    verdicts = []
    for index, mutant in enumerate(chosen, 1):
        verdict, seconds, tail = run(mutant, args.timeout)
        verdicts.append(verdict)
        print(f"[{index}/{len(chosen)}] {verdict:8} {seconds:6.1f} s  {mutant.name}  ({tail})", flush=True)
    killed = verdicts.count("killed")
    print(f"{killed}/{len(chosen)} killed" + ("" if killed == len(chosen) else f"; not killed: {len(chosen) - killed}"))
    sys.exit(0 if killed == len(chosen) else 1)


if __name__ == "__main__":
    main()
