"""The four KVM proposals' published figures (/work/shared/references/ in
the project's notes; the posts quoted in docs/mmu.md), as they were posted.
These are the other side of each comparison: sprig's side always comes from
the run being reported."""

LEAF_HINT = {
    "title": "Skip empty TDP leaf page tables (leaf-empty hint)",
    "source": "KVM RFC, Hao Zhang: tdp_mmu_zap_leafs() duration, median of five "
              "matched runs, 1 GiB guest, 4 vCPUs, MADV_DONTNEED churn",
    "unit": "ms",
    # pattern: (original median, patched median)
    "rows": {"same16": (330, 35), "same4": (341, 54), "sweep16": (1456, 1386),
             "sweep4": (1252, 1244), "sweep2": (1197, 1246), "sweep1": (1353, 1138)},
    "wait_source": "KVM RFC, Hao Zhang: vCPU fault-side mmu_lock wait p99.9 (perf "
                   "probes), median of the five matched runs, 4 vCPUs, on hardware",
    # pattern: (original p99.9, patched p99.9), microseconds
    "wait_p999_us": {"same16": (78, 61), "same4": (62, 38)},
}

SPLIT = {
    "title": "Split huge pages on fault (split on fault)",
    "source": "KVM patch, David Matlack: execute_perf_test (1 GiB pages) and "
              "dirty_log_perf_test iteration 1, 2 vCPUs, ept=Y",
    "unit": "s",
    # row: (zap before, split after, eager split) ; None where not published
    "rows": {"exec": (2.899670885, 0.111965688, None),
             "dirty 5%": (0.332305091, 0.019615027, 0.006108211),
             "dirty 100%": (0.317710329, 0.296204596, 0.058689782)},
}

RMAP = {
    "title": "Counted rmap descriptors (PTE_LIST_EXT 3 -> 15, per-descriptor count)",
    "source": "KVM series, Peter Xu: ./rmap_fork 500 (500 children forked and "
              "recycled, EPT=N), total fork time",
    "unit": "(as posted)",
    # layout: time
    "rows": {"ext3": 367.20, "ext14": 302.00, "counted": 265.20},
}

PREFETCH = {
    "title": "Prefetch the forward run of pages on TDP faults (forward prefetch)",
    "source": "KVM RFC, Marco Marangoni: touching 128 MiB restored through "
              "userfaultfd, UFFD_COPY in chunks, c8i.metal-48xl and nested",
    "unit": "ms or %",
    # chunk: (metal before, metal after, nested before, nested after) in ms, or
    # the published change in percent where only that was posted
    "rows": {"2M": {"metal_ms": (129.1, 100.3), "nested_ms": (495.8, 121.5)},
             "512K": {"metal_pct": -15.3, "nested_pct": -70.0},
             "4K": {"regression_pct": (2.0, 4.0)}},
}
