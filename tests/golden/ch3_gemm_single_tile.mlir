module attributes {gpu.container_module} {
  func.func @gemm_tile(%arg0: memref<128x64xf16>, %arg1: memref<64x128xf16>, %arg2: memref<128x128xf32>) {
    %0 = builtin.unrealized_conversion_cast %arg0 : memref<128x64xf16> to !llvm.ptr {nvdsl.tensormap = {box = array<i64: 128, 64>, interleave = 0 : i64, l2_promotion = 0 : i64, oob_nan = false, swizzle = 128 : i64}}
    %1 = builtin.unrealized_conversion_cast %arg1 : memref<64x128xf16> to !llvm.ptr {nvdsl.tensormap = {box = array<i64: 64, 64>, interleave = 0 : i64, l2_promotion = 0 : i64, oob_nan = false, swizzle = 128 : i64}}
    %c1 = arith.constant 1 : index
    %c1_0 = arith.constant 1 : index
    %c1_1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %c1_2 = arith.constant 1 : index
    %c1_3 = arith.constant 1 : index
    %c32768_i32 = arith.constant 32768 : i32
    gpu.launch blocks(%arg3, %arg4, %arg5) in (%arg9 = %c1, %arg10 = %c1_0, %arg11 = %c1_1) threads(%arg6, %arg7, %arg8) in (%arg12 = %c128, %arg13 = %c1_2, %arg14 = %c1_3) dynamic_shared_memory_size %c32768_i32 module(@gemm_tile_kernels) function(@gemm_tile_kernel) {
      %2 = builtin.unrealized_conversion_cast %1 : !llvm.ptr to !nvgpu.tensormap.descriptor<tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
      %3 = builtin.unrealized_conversion_cast %0 : !llvm.ptr to !nvgpu.tensormap.descriptor<tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
      %4 = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>>
      %5 = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %c0 = arith.constant 0 : index
      %view = memref.view %5[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<128x64xf16, #gpu.address_space<workgroup>>
      %c16384 = arith.constant 16384 : index
      %view_4 = memref.view %5[%c16384][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x128xf16, #gpu.address_space<workgroup>>
      %c16384_5 = arith.constant 16384 : index
      %view_6 = memref.view %5[%c16384_5][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xf16, #gpu.address_space<workgroup>>
      %c24576 = arith.constant 24576 : index
      %view_7 = memref.view %5[%c24576][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xf16, #gpu.address_space<workgroup>>
      %c0_8 = arith.constant 0 : index
      %c0_9 = arith.constant 0 : index
      %6 = arith.cmpi eq, %arg6, %c0_9 : index
      %c1_10 = arith.constant 1 : index
      nvgpu.mbarrier.init %4[%c0_8], %c1_10, predicate = %6 : <memorySpace = #gpu.address_space<workgroup>>
      gpu.barrier
      %c32768 = arith.constant 32768 : index
      nvgpu.mbarrier.arrive.expect_tx %4[%c0_8], %c32768, predicate = %6 : <memorySpace = #gpu.address_space<workgroup>>
      %c0_11 = arith.constant 0 : index
      %c0_12 = arith.constant 0 : index
      nvgpu.tma.async.load %3[%c0_11, %c0_12], %4[%c0_8] to %view, predicate = %6 : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>> -> memref<128x64xf16, #gpu.address_space<workgroup>>
      %c0_13 = arith.constant 0 : index
      %c0_14 = arith.constant 0 : index
      nvgpu.tma.async.load %2[%c0_13, %c0_14], %4[%c0_8] to %view_6, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>> -> memref<64x64xf16, #gpu.address_space<workgroup>>
      %c64 = arith.constant 64 : index
      %c0_15 = arith.constant 0 : index
      nvgpu.tma.async.load %2[%c64, %c0_15], %4[%c0_8] to %view_7, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>> -> memref<64x64xf16, #gpu.address_space<workgroup>>
      %false = arith.constant false
      %c10000000 = arith.constant 10000000 : index
      nvgpu.mbarrier.try_wait.parity %4[%c0_8], %false, %c10000000 : <memorySpace = #gpu.address_space<workgroup>>
      %7 = nvgpu.warpgroup.mma.init.accumulator -> <fragmented = vector<128x128xf32>>
      %8 = nvgpu.warpgroup.generate.descriptor %view, %3 : memref<128x64xf16, #gpu.address_space<workgroup>>, <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> -> <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>>
      %9 = nvgpu.warpgroup.generate.descriptor %view_4, %2 : memref<64x128xf16, #gpu.address_space<workgroup>>, <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> -> <tensor = memref<64x128xf16, #gpu.address_space<workgroup>>>
      %10 = nvgpu.warpgroup.mma %8, %9, %7 {transposeB, waitGroup = 0 : i64} : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>>, <tensor = memref<64x128xf16, #gpu.address_space<workgroup>>>, <fragmented = vector<128x128xf32>> -> <fragmented = vector<128x128xf32>>
      nvvm.wgmma.wait.group.sync.aligned 0
      nvgpu.warpgroup.mma.store %10, %arg2 : <fragmented = vector<128x128xf32>> to memref<128x128xf32>
      gpu.terminator
    }
    return
  }
}
