"""Run on the GPU machine: ``source .gpu-bundle/setup.sh && python3 tools/decode_host_profile.py``.

Where a decode step's time goes on the host: each stage of nvdsl.kernels.attention_varlen.attention_decode timed
with perf_counter (launches are asynchronous: host time only), against the whole call with and without a sync."""
import time

import torch

import nvdsl.kernels.attention as attention_module
import nvdsl.kernels.attention_varlen as varlen


def main(batch=1, slots=4096, calls=200):
    q = torch.randn(batch, 32, 1, 128, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(batch, 8, slots, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    held = torch.full((batch,), slots * 3 // 4, dtype=torch.int32, device="cuda")
    o = torch.empty_like(q)
    stages = {}

    def timed(name, fn):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            out = fn(*args, **kwargs)
            stages[name] = stages.get(name, 0.0) + time.perf_counter() - start
            return out
        return wrapper
    for module, names in ((varlen, ("_split_queries", "_combine_splits", "_checked_problem", "_cache_intervals",
                                    "_interval_blocks", "attention", "_forward", "decode_splits")),
                          (attention_module, ("block_ranges", "kept_blocks", "_block_ranges"))):
        for name in names:
            if hasattr(module, name):
                setattr(module, name, timed(f"{module.__name__.split('.')[-1]}.{name}", getattr(module, name)))
    varlen.jit.sm_count = timed("jit.sm_count", varlen.jit.sm_count)
    for _ in range(20):
        varlen.attention_decode(q, k, v, o, held)
    torch.cuda.synchronize()
    stages.clear()
    start = time.perf_counter()
    for _ in range(calls):
        varlen.attention_decode(q, k, v, o, held)
    host = time.perf_counter() - start
    torch.cuda.synchronize()
    total = time.perf_counter() - start
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"B={batch} slots={slots}: {host / calls * 1e6:.1f} us host per call, {total / calls * 1e6:.1f} us with "
          f"the GPU, splits {varlen.decode_splits(batch, 8, 4, slots, sms)}")
    for name, seconds in sorted(stages.items(), key=lambda kv: -kv[1]):
        print(f"  {name:34s} {seconds / calls * 1e6:8.1f} us")


if __name__ == "__main__":
    main(1, 4096)
    main(8, 16384)
