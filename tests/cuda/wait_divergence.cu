// A minimal CUDA C++ reproduction of the mbarrier wait loops of nvdsl's chapter 5, for
// compute-sanitizer synccheck. A producer warp arrives on an mbarrier after a delay; two consumer
// warps wait on it and then meet at a named barrier (bar.sync 1, 64), as chapter 5's consumers meet
// at bar.sync 9 after their waits. The wait is either nvgpu's lowering (try_wait with a 10 ms
// suspend-time hint in a loop whose branches are bra.uni: ptxas emits a NANOSLEEP) or CUTLASS's
// (no hint). The hypothesis: synccheck reports divergent threads with the first and not the second.
// (ptxas puts a WARPSYNC.ALL before this file's named barrier, which nvdsl's chapter 5 does not
// get; if the hint variant is clean here too, chapter 5's own synccheck run decides.)
//
// Build: nvcc -arch=sm_90a -o wait_divergence wait_divergence.cu
// Run:   compute-sanitizer --tool synccheck ./wait_divergence hint|nohint
#include <cstdint>
#include <cstdio>
#include <cstring>

__device__ __forceinline__ void wait_with_hint(uint32_t bar, uint32_t parity) {
    asm volatile("{\n .reg .pred P1;\n LAB_WAIT:\n"
                 " mbarrier.try_wait.parity.shared.b64 P1, [%0], %1, %2;\n"
                 " @P1 bra.uni DONE;\n bra.uni LAB_WAIT;\n DONE:\n }\n"
                 :: "r"(bar), "r"(parity), "r"(10000000u) : "memory");
}

__device__ __forceinline__ void wait_without_hint(uint32_t bar, uint32_t parity) {
    asm volatile("{\n .reg .pred P1;\n LAB_WAIT:\n"
                 " mbarrier.try_wait.parity.shared.b64 P1, [%0], %1;\n"
                 " @P1 bra DONE;\n bra LAB_WAIT;\n DONE:\n }\n"
                 :: "r"(bar), "r"(parity) : "memory");
}

template <bool Hint>
__global__ void handoff(int *out, long long delay) {
    __shared__ __align__(8) uint64_t bar;
    const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(&bar));
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared.b64 [%0], 1;" :: "r"(addr) : "memory");
    }
    __syncthreads();
    if (warp == 0) {                                   // the producer: arrive after a delay
        if (lane == 0) {
            long long start = clock64();
            while (clock64() - start < delay) {}
            asm volatile("{\n .reg .b64 state;\n mbarrier.arrive.shared.b64 state, [%0];\n }"
                         :: "r"(addr) : "memory");
        }
    } else {                                           // two consumer warps
        if (Hint) wait_with_hint(addr, 0); else wait_without_hint(addr, 0);
        asm volatile("bar.sync 1, 64;" ::: "memory");
        out[threadIdx.x - 32] = 1;
    }
}

int main(int argc, char **argv) {
    const bool hint = argc < 2 || std::strcmp(argv[1], "nohint") != 0;
    int *out = nullptr;
    cudaMalloc(&out, 64 * sizeof(int));
    cudaMemset(out, 0, 64 * sizeof(int));
    for (int i = 0; i < 8; ++i) {
        if (hint) handoff<true><<<8, 96>>>(out, 200000); else handoff<false><<<8, 96>>>(out, 200000);
    }
    int host[64];
    cudaMemcpy(host, out, sizeof(host), cudaMemcpyDeviceToHost);
    cudaError_t error = cudaDeviceSynchronize();
    int sum = 0;
    for (int v : host) sum += v;
    std::printf("%s: %s, %d of 64 written\n", hint ? "hint" : "nohint", cudaGetErrorString(error), sum);
    cudaFree(out);
    return error == cudaSuccess && sum == 64 ? 0 : 1;
}
