module attributes {gpu.container_module} {
  func.func @double_by_tiles(%arg0: memref<256x192xf16>, %arg1: memref<256x192xf16>) {
    %0 = builtin.unrealized_conversion_cast %arg0 : memref<256x192xf16> to !llvm.ptr {nvdsl.tensormap = {box = array<i64: 64, 64>, interleave = 0 : i64, l2_promotion = 0 : i64, oob_nan = false, swizzle = 0 : i64}}
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c1_0 = arith.constant 1 : index
    %c1_1 = arith.constant 1 : index
    %c8192_i32 = arith.constant 8192 : i32
    gpu.launch blocks(%arg2, %arg3, %arg4) in (%arg8 = %c3, %arg9 = %c4, %arg10 = %c1) threads(%arg5, %arg6, %arg7) in (%arg11 = %c64, %arg12 = %c1_0, %arg13 = %c1_1) dynamic_shared_memory_size %c8192_i32 module(@double_by_tiles_kernels) function(@double_by_tiles_kernel) {
      %1 = builtin.unrealized_conversion_cast %0 : !llvm.ptr to !nvgpu.tensormap.descriptor<tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>
      %2 = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>>
      %3 = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %c0 = arith.constant 0 : index
      %view = memref.view %3[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xf16, #gpu.address_space<workgroup>>
      %c0_2 = arith.constant 0 : index
      %c0_3 = arith.constant 0 : index
      %4 = arith.cmpi eq, %arg5, %c0_3 : index
      %c1_4 = arith.constant 1 : index
      nvgpu.mbarrier.init %2[%c0_2], %c1_4, predicate = %4 : <memorySpace = #gpu.address_space<workgroup>>
      nvgpu.tma.prefetch.descriptor %1, predicate = %4 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>
      gpu.barrier
      %c64_5 = arith.constant 64 : index
      %5 = arith.muli %arg3, %c64_5 : index
      %c64_6 = arith.constant 64 : index
      %6 = arith.muli %arg2, %c64_6 : index
      %c8192 = arith.constant 8192 : index
      nvgpu.mbarrier.arrive.expect_tx %2[%c0_2], %c8192, predicate = %4 : <memorySpace = #gpu.address_space<workgroup>>
      nvgpu.tma.async.load %1[%6, %5], %2[%c0_2] to %view, predicate = %4 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>> -> memref<64x64xf16, #gpu.address_space<workgroup>>
      %false = arith.constant false
      %7 = nvgpu.mbarrier.get %2[%c0_2] : <memorySpace = #gpu.address_space<workgroup>> -> i64
      %8 = llvm.inttoptr %7 : i64 to !llvm.ptr<3>
      %9 = arith.extui %false : i1 to i32
      scf.while : () -> () {
        %10 = nvvm.mbarrier.try_wait %8, %9 : !llvm.ptr<3>, i32 -> i1
        %true = arith.constant true
        %11 = arith.xori %10, %true : i1
        scf.condition(%11)
      } do {
        scf.yield
      }
      %c0_7 = arith.constant 0 : index
      %c64_8 = arith.constant 64 : index
      %c1_9 = arith.constant 1 : index
      scf.for %arg14 = %c0_7 to %c64_8 step %c1_9 {
        %10 = memref.load %view[%arg5, %arg14] : memref<64x64xf16, #gpu.address_space<workgroup>>
        %cst = arith.constant 2.000000e+00 : f16
        %11 = arith.mulf %10, %cst fastmath<contract> : f16
        %12 = arith.addi %5, %arg5 : index
        %13 = arith.addi %6, %arg14 : index
        memref.store %11, %arg1[%12, %13] : memref<256x192xf16>
      }
      gpu.terminator
    }
    return
  }
}
