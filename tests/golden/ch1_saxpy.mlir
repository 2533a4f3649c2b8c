module attributes {gpu.container_module} {
  func.func @saxpy(%arg0: memref<1000x1500xf32>, %arg1: memref<1000x1500xf32>, %arg2: f32) {
    %c47 = arith.constant 47 : index
    %c32 = arith.constant 32 : index
    %c1 = arith.constant 1 : index
    %c32_0 = arith.constant 32 : index
    %c8 = arith.constant 8 : index
    %c1_1 = arith.constant 1 : index
    %c0_i32 = arith.constant 0 : i32
    gpu.launch blocks(%arg3, %arg4, %arg5) in (%arg9 = %c47, %arg10 = %c32, %arg11 = %c1) threads(%arg6, %arg7, %arg8) in (%arg12 = %c32_0, %arg13 = %c8, %arg14 = %c1_1) dynamic_shared_memory_size %c0_i32 module(@saxpy_kernels) function(@saxpy_kernel) {
      %c32_2 = arith.constant 32 : index
      %0 = arith.muli %arg3, %c32_2 : index
      %1 = arith.addi %0, %arg6 : index
      %c0 = arith.constant 0 : index
      %c4 = arith.constant 4 : index
      %c1_3 = arith.constant 1 : index
      scf.for %arg15 = %c0 to %c4 step %c1_3 {
        %c32_4 = arith.constant 32 : index
        %2 = arith.muli %arg4, %c32_4 : index
        %c8_5 = arith.constant 8 : index
        %3 = arith.muli %arg15, %c8_5 : index
        %4 = arith.addi %2, %3 : index
        %5 = arith.addi %4, %arg7 : index
        %c1000 = arith.constant 1000 : index
        %6 = arith.cmpi slt, %5, %c1000 : index
        %c1500 = arith.constant 1500 : index
        %7 = arith.cmpi slt, %1, %c1500 : index
        %8 = arith.andi %6, %7 : i1
        scf.if %8 {
          %9 = memref.load %arg0[%5, %1] : memref<1000x1500xf32>
          %10 = arith.mulf %arg2, %9 fastmath<contract> : f32
          %11 = memref.load %arg1[%5, %1] : memref<1000x1500xf32>
          %12 = arith.addf %10, %11 fastmath<contract> : f32
          memref.store %12, %arg1[%5, %1] : memref<1000x1500xf32>
        } else {
        }
      }
      gpu.terminator
    }
    return
  }
}
