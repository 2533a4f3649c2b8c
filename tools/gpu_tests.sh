#!/usr/bin/env bash
# The GPU test suite in one device call (at most 10 minutes): `-m "gpu and not sanitizer"` in five groups of test
# files run side by side (the machine's 16 cores compile their kernels in parallel; the one GPU runs them), and the
# compute-sanitizer cases of a -k filter beside them. Each group's log goes to $OUT; the last lines of each are
# printed. On the GPU machine, from the project root:
#   source .gpu-bundle/setup.sh && bash tools/gpu_tests.sh [SANITIZER_FILTER]
# (SANITIZER_FILTER: a pytest -k expression over tests/test_sanitizer.py's cases, e.g. "attention-backward"; "all"
# for every case, which takes longer than the rest together; none given: no sanitizer run.)
# Measured on an H200 (2026-12-02): the five groups took 46 s to 533 s, 1031 tests.
set -u
out=${OUT:-/tmp/gpu-tests}
mkdir -p "$out"
limit=${GPU_TESTS_LIMIT_S:-540}
run() {   # run NAME pytest-arguments...
    local name=$1; shift
    timeout "$limit" python3 -m pytest -q -p no:randomly -rfE "$@" > "$out/$name.log" 2>&1
}
first=(tests/test_attention.py tests/test_attention_backward.py tests/test_overlap.py tests/test_tasks.py)
second=(tests/test_attention_variants.py tests/test_attention_varlen.py tests/test_torch_attention.py
        tests/test_tasks_attention.py tests/test_tasks_pingpong.py tests/test_tasks_ranges.py)
third=(tests/test_memory.py tests/test_math.py tests/test_hopper.py tests/test_gemm.py tests/test_gpu.py
       tests/test_empty.py tests/test_tiles.py)
named=(tests/test_matrix.py "${first[@]}" "${second[@]}" "${third[@]}")
run matrix -m "gpu and not sanitizer" tests/test_matrix.py &
run attention-tasks -m "gpu and not sanitizer" "${first[@]}" &
run variants -m "gpu and not sanitizer" "${second[@]}" &
run core -m "gpu and not sanitizer" "${third[@]}" &
run rest -m "gpu and not sanitizer" tests $(printf -- "--ignore=%s " "${named[@]}") &
if [ $# -gt 0 ]; then
    if [ "$1" = all ]; then run sanitizer -m sanitizer tests/test_sanitizer.py &
    else run sanitizer -m sanitizer tests/test_sanitizer.py -k "$1" &
    fi
fi
wait
status=0
for log in "$out"/*.log; do
    echo "== $(basename "$log")"; tail -n 2 "$log"
    grep -qE "^(FAILED|ERROR)|[0-9]+ (failed|error)" "$log" && status=1
    grep -qE "[0-9]+ passed" "$log" || status=1
done
exit $status
