module attributes {gpu.container_module} {
  func.func @hello() {
    %c2 = arith.constant 2 : index
    %c1 = arith.constant 1 : index
    %c1_0 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c1_1 = arith.constant 1 : index
    %c1_2 = arith.constant 1 : index
    %c0_i32 = arith.constant 0 : i32
    gpu.launch blocks(%arg0, %arg1, %arg2) in (%arg6 = %c2, %arg7 = %c1, %arg8 = %c1_0) threads(%arg3, %arg4, %arg5) in (%arg9 = %c4, %arg10 = %c1_1, %arg11 = %c1_2) dynamic_shared_memory_size %c0_i32 module(@hello_kernels) function(@hello_kernel) {
      %0 = arith.index_cast %arg3 : index to i64
      %1 = arith.index_cast %arg0 : index to i64
      %2 = arith.index_cast %arg9 : index to i64
      gpu.printf "hello from thread %lld of block %lld (%lld threads per block)\0A", %0, %1, %2 : i64, i64, i64
      gpu.terminator
    }
    return
  }
}
