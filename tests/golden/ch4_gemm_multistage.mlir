module attributes {gpu.container_module} {
  func.func @gemm(%arg0: memref<256x512xf16>, %arg1: memref<512x256xf16>, %arg2: memref<256x256xf32>) {
    %0 = builtin.unrealized_conversion_cast %arg0 : memref<256x512xf16> to !llvm.ptr {nvdsl.tensormap = {box = array<i64: 128, 64>, interleave = 0 : i64, l2_promotion = 0 : i64, oob_nan = false, swizzle = 128 : i64}}
    %1 = builtin.unrealized_conversion_cast %arg1 : memref<512x256xf16> to !llvm.ptr {nvdsl.tensormap = {box = array<i64: 64, 64>, interleave = 0 : i64, l2_promotion = 0 : i64, oob_nan = false, swizzle = 128 : i64}}
    %c2 = arith.constant 2 : index
    %c2_0 = arith.constant 2 : index
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %c1_1 = arith.constant 1 : index
    %c1_2 = arith.constant 1 : index
    %c131072_i32 = arith.constant 131072 : i32
    gpu.launch blocks(%arg3, %arg4, %arg5) in (%arg9 = %c2, %arg10 = %c2_0, %arg11 = %c1) threads(%arg6, %arg7, %arg8) in (%arg12 = %c128, %arg13 = %c1_1, %arg14 = %c1_2) dynamic_shared_memory_size %c131072_i32 module(@gemm_kernels) function(@gemm_kernel) {
      %2 = builtin.unrealized_conversion_cast %1 : !llvm.ptr to !nvgpu.tensormap.descriptor<tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
      %3 = builtin.unrealized_conversion_cast %0 : !llvm.ptr to !nvgpu.tensormap.descriptor<tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
      %4 = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
      %5 = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %c0 = arith.constant 0 : index
      %view = memref.view %5[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<128x64xf16, #gpu.address_space<workgroup>>
      %c16384 = arith.constant 16384 : index
      %view_3 = memref.view %5[%c16384][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x128xf16, #gpu.address_space<workgroup>>
      %c16384_4 = arith.constant 16384 : index
      %view_5 = memref.view %5[%c16384_4][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xf16, #gpu.address_space<workgroup>>
      %c24576 = arith.constant 24576 : index
      %view_6 = memref.view %5[%c24576][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xf16, #gpu.address_space<workgroup>>
      %c32768 = arith.constant 32768 : index
      %view_7 = memref.view %5[%c32768][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<128x64xf16, #gpu.address_space<workgroup>>
      %c49152 = arith.constant 49152 : index
      %view_8 = memref.view %5[%c49152][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x128xf16, #gpu.address_space<workgroup>>
      %c49152_9 = arith.constant 49152 : index
      %view_10 = memref.view %5[%c49152_9][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xf16, #gpu.address_space<workgroup>>
      %c57344 = arith.constant 57344 : index
      %view_11 = memref.view %5[%c57344][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xf16, #gpu.address_space<workgroup>>
      %c65536 = arith.constant 65536 : index
      %view_12 = memref.view %5[%c65536][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<128x64xf16, #gpu.address_space<workgroup>>
      %c81920 = arith.constant 81920 : index
      %view_13 = memref.view %5[%c81920][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x128xf16, #gpu.address_space<workgroup>>
      %c81920_14 = arith.constant 81920 : index
      %view_15 = memref.view %5[%c81920_14][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xf16, #gpu.address_space<workgroup>>
      %c90112 = arith.constant 90112 : index
      %view_16 = memref.view %5[%c90112][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xf16, #gpu.address_space<workgroup>>
      %c98304 = arith.constant 98304 : index
      %view_17 = memref.view %5[%c98304][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<128x64xf16, #gpu.address_space<workgroup>>
      %c114688 = arith.constant 114688 : index
      %view_18 = memref.view %5[%c114688][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x128xf16, #gpu.address_space<workgroup>>
      %c114688_19 = arith.constant 114688 : index
      %view_20 = memref.view %5[%c114688_19][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xf16, #gpu.address_space<workgroup>>
      %c122880 = arith.constant 122880 : index
      %view_21 = memref.view %5[%c122880][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xf16, #gpu.address_space<workgroup>>
      %c0_22 = arith.constant 0 : index
      %6 = arith.cmpi eq, %arg6, %c0_22 : index
      %c128_23 = arith.constant 128 : index
      %7 = arith.muli %arg4, %c128_23 : index
      %c128_24 = arith.constant 128 : index
      %8 = arith.muli %arg3, %c128_24 : index
      %c0_25 = arith.constant 0 : index
      %c1_26 = arith.constant 1 : index
      nvgpu.mbarrier.init %4[%c0_25], %c1_26, predicate = %6 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
      %c1_27 = arith.constant 1 : index
      %c1_28 = arith.constant 1 : index
      nvgpu.mbarrier.init %4[%c1_27], %c1_28, predicate = %6 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
      %c2_29 = arith.constant 2 : index
      %c1_30 = arith.constant 1 : index
      nvgpu.mbarrier.init %4[%c2_29], %c1_30, predicate = %6 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
      %c3 = arith.constant 3 : index
      %c1_31 = arith.constant 1 : index
      nvgpu.mbarrier.init %4[%c3], %c1_31, predicate = %6 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
      nvgpu.tma.prefetch.descriptor %3, predicate = %6 : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
      nvgpu.tma.prefetch.descriptor %2, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
      gpu.barrier
      %c0_32 = arith.constant 0 : index
      %c32768_33 = arith.constant 32768 : index
      nvgpu.mbarrier.arrive.expect_tx %4[%c0_32], %c32768_33, predicate = %6 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
      %c0_34 = arith.constant 0 : index
      %c0_35 = arith.constant 0 : index
      nvgpu.tma.async.load %3[%c0_35, %7], %4[%c0_34] to %view, predicate = %6 : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<128x64xf16, #gpu.address_space<workgroup>>
      %c0_36 = arith.constant 0 : index
      %c0_37 = arith.constant 0 : index
      %9 = arith.addi %8, %c0_37 : index
      %c0_38 = arith.constant 0 : index
      nvgpu.tma.async.load %2[%9, %c0_38], %4[%c0_36] to %view_5, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
      %c0_39 = arith.constant 0 : index
      %c64 = arith.constant 64 : index
      %10 = arith.addi %8, %c64 : index
      %c0_40 = arith.constant 0 : index
      nvgpu.tma.async.load %2[%10, %c0_40], %4[%c0_39] to %view_6, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
      %c1_41 = arith.constant 1 : index
      %c32768_42 = arith.constant 32768 : index
      nvgpu.mbarrier.arrive.expect_tx %4[%c1_41], %c32768_42, predicate = %6 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
      %c1_43 = arith.constant 1 : index
      %c64_44 = arith.constant 64 : index
      nvgpu.tma.async.load %3[%c64_44, %7], %4[%c1_43] to %view_7, predicate = %6 : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<128x64xf16, #gpu.address_space<workgroup>>
      %c1_45 = arith.constant 1 : index
      %c0_46 = arith.constant 0 : index
      %11 = arith.addi %8, %c0_46 : index
      %c64_47 = arith.constant 64 : index
      nvgpu.tma.async.load %2[%11, %c64_47], %4[%c1_45] to %view_10, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
      %c1_48 = arith.constant 1 : index
      %c64_49 = arith.constant 64 : index
      %12 = arith.addi %8, %c64_49 : index
      %c64_50 = arith.constant 64 : index
      nvgpu.tma.async.load %2[%12, %c64_50], %4[%c1_48] to %view_11, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
      %c2_51 = arith.constant 2 : index
      %c32768_52 = arith.constant 32768 : index
      nvgpu.mbarrier.arrive.expect_tx %4[%c2_51], %c32768_52, predicate = %6 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
      %c2_53 = arith.constant 2 : index
      %c128_54 = arith.constant 128 : index
      nvgpu.tma.async.load %3[%c128_54, %7], %4[%c2_53] to %view_12, predicate = %6 : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<128x64xf16, #gpu.address_space<workgroup>>
      %c2_55 = arith.constant 2 : index
      %c0_56 = arith.constant 0 : index
      %13 = arith.addi %8, %c0_56 : index
      %c128_57 = arith.constant 128 : index
      nvgpu.tma.async.load %2[%13, %c128_57], %4[%c2_55] to %view_15, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
      %c2_58 = arith.constant 2 : index
      %c64_59 = arith.constant 64 : index
      %14 = arith.addi %8, %c64_59 : index
      %c128_60 = arith.constant 128 : index
      nvgpu.tma.async.load %2[%14, %c128_60], %4[%c2_58] to %view_16, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
      %15 = nvgpu.warpgroup.mma.init.accumulator -> <fragmented = vector<128x128xf32>>
      %c0_61 = arith.constant 0 : index
      %c2_62 = arith.constant 2 : index
      %c1_63 = arith.constant 1 : index
      %16 = scf.for %arg15 = %c0_61 to %c2_62 step %c1_63 iter_args(%arg16 = %15) -> (!nvgpu.warpgroup.accumulator<fragmented = vector<128x128xf32>>) {
        %c4 = arith.constant 4 : index
        %17 = arith.muli %arg15, %c4 : index
        %c0_64 = arith.constant 0 : index
        %18 = arith.addi %17, %c0_64 : index
        %c0_65 = arith.constant 0 : index
        %c1_66 = arith.constant 1 : index
        %19 = arith.andi %arg15, %c1_66 : index
        %c0_67 = arith.constant 0 : index
        %20 = arith.cmpi ne, %19, %c0_67 : index
        %c10000000 = arith.constant 10000000 : index
        nvgpu.mbarrier.try_wait.parity %4[%c0_65], %20, %c10000000 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
        %21 = nvgpu.warpgroup.generate.descriptor %view, %3 : memref<128x64xf16, #gpu.address_space<workgroup>>, <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> -> <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>>
        %22 = nvgpu.warpgroup.generate.descriptor %view_3, %2 : memref<64x128xf16, #gpu.address_space<workgroup>>, <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> -> <tensor = memref<64x128xf16, #gpu.address_space<workgroup>>>
        %23 = nvgpu.warpgroup.mma %21, %22, %arg16 {transposeB, waitGroup = 0 : i64} : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>>, <tensor = memref<64x128xf16, #gpu.address_space<workgroup>>>, <fragmented = vector<128x128xf32>> -> <fragmented = vector<128x128xf32>>
        gpu.barrier
        %c4_68 = arith.constant 4 : index
        %24 = arith.addi %18, %c4_68 : index
        %c1_69 = arith.constant 1 : index
        %25 = arith.subi %24, %c1_69 : index
        %c8 = arith.constant 8 : index
        %26 = arith.cmpi slt, %25, %c8 : index
        scf.if %26 {
          %c3_97 = arith.constant 3 : index
          %c32768_98 = arith.constant 32768 : index
          nvgpu.mbarrier.arrive.expect_tx %4[%c3_97], %c32768_98, predicate = %6 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
          %c3_99 = arith.constant 3 : index
          %c64_100 = arith.constant 64 : index
          %57 = arith.muli %25, %c64_100 : index
          nvgpu.tma.async.load %3[%57, %7], %4[%c3_99] to %view_17, predicate = %6 : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<128x64xf16, #gpu.address_space<workgroup>>
          %c3_101 = arith.constant 3 : index
          %c64_102 = arith.constant 64 : index
          %58 = arith.muli %25, %c64_102 : index
          %c0_103 = arith.constant 0 : index
          %59 = arith.addi %8, %c0_103 : index
          nvgpu.tma.async.load %2[%59, %58], %4[%c3_101] to %view_20, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
          %c3_104 = arith.constant 3 : index
          %c64_105 = arith.constant 64 : index
          %60 = arith.muli %25, %c64_105 : index
          %c64_106 = arith.constant 64 : index
          %61 = arith.addi %8, %c64_106 : index
          nvgpu.tma.async.load %2[%61, %60], %4[%c3_104] to %view_21, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
        } else {
        }
        %c4_70 = arith.constant 4 : index
        %27 = arith.muli %arg15, %c4_70 : index
        %c1_71 = arith.constant 1 : index
        %28 = arith.addi %27, %c1_71 : index
        %c1_72 = arith.constant 1 : index
        %c1_73 = arith.constant 1 : index
        %29 = arith.andi %arg15, %c1_73 : index
        %c0_74 = arith.constant 0 : index
        %30 = arith.cmpi ne, %29, %c0_74 : index
        %c10000000_75 = arith.constant 10000000 : index
        nvgpu.mbarrier.try_wait.parity %4[%c1_72], %30, %c10000000_75 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
        %31 = nvgpu.warpgroup.generate.descriptor %view_7, %3 : memref<128x64xf16, #gpu.address_space<workgroup>>, <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> -> <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>>
        %32 = nvgpu.warpgroup.generate.descriptor %view_8, %2 : memref<64x128xf16, #gpu.address_space<workgroup>>, <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> -> <tensor = memref<64x128xf16, #gpu.address_space<workgroup>>>
        %33 = nvgpu.warpgroup.mma %31, %32, %23 {transposeB, waitGroup = 0 : i64} : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>>, <tensor = memref<64x128xf16, #gpu.address_space<workgroup>>>, <fragmented = vector<128x128xf32>> -> <fragmented = vector<128x128xf32>>
        gpu.barrier
        %c4_76 = arith.constant 4 : index
        %34 = arith.addi %28, %c4_76 : index
        %c1_77 = arith.constant 1 : index
        %35 = arith.subi %34, %c1_77 : index
        %c8_78 = arith.constant 8 : index
        %36 = arith.cmpi slt, %35, %c8_78 : index
        scf.if %36 {
          %c0_97 = arith.constant 0 : index
          %c32768_98 = arith.constant 32768 : index
          nvgpu.mbarrier.arrive.expect_tx %4[%c0_97], %c32768_98, predicate = %6 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
          %c0_99 = arith.constant 0 : index
          %c64_100 = arith.constant 64 : index
          %57 = arith.muli %35, %c64_100 : index
          nvgpu.tma.async.load %3[%57, %7], %4[%c0_99] to %view, predicate = %6 : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<128x64xf16, #gpu.address_space<workgroup>>
          %c0_101 = arith.constant 0 : index
          %c64_102 = arith.constant 64 : index
          %58 = arith.muli %35, %c64_102 : index
          %c0_103 = arith.constant 0 : index
          %59 = arith.addi %8, %c0_103 : index
          nvgpu.tma.async.load %2[%59, %58], %4[%c0_101] to %view_5, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
          %c0_104 = arith.constant 0 : index
          %c64_105 = arith.constant 64 : index
          %60 = arith.muli %35, %c64_105 : index
          %c64_106 = arith.constant 64 : index
          %61 = arith.addi %8, %c64_106 : index
          nvgpu.tma.async.load %2[%61, %60], %4[%c0_104] to %view_6, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
        } else {
        }
        %c4_79 = arith.constant 4 : index
        %37 = arith.muli %arg15, %c4_79 : index
        %c2_80 = arith.constant 2 : index
        %38 = arith.addi %37, %c2_80 : index
        %c2_81 = arith.constant 2 : index
        %c1_82 = arith.constant 1 : index
        %39 = arith.andi %arg15, %c1_82 : index
        %c0_83 = arith.constant 0 : index
        %40 = arith.cmpi ne, %39, %c0_83 : index
        %c10000000_84 = arith.constant 10000000 : index
        nvgpu.mbarrier.try_wait.parity %4[%c2_81], %40, %c10000000_84 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
        %41 = nvgpu.warpgroup.generate.descriptor %view_12, %3 : memref<128x64xf16, #gpu.address_space<workgroup>>, <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> -> <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>>
        %42 = nvgpu.warpgroup.generate.descriptor %view_13, %2 : memref<64x128xf16, #gpu.address_space<workgroup>>, <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> -> <tensor = memref<64x128xf16, #gpu.address_space<workgroup>>>
        %43 = nvgpu.warpgroup.mma %41, %42, %33 {transposeB, waitGroup = 0 : i64} : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>>, <tensor = memref<64x128xf16, #gpu.address_space<workgroup>>>, <fragmented = vector<128x128xf32>> -> <fragmented = vector<128x128xf32>>
        gpu.barrier
        %c4_85 = arith.constant 4 : index
        %44 = arith.addi %38, %c4_85 : index
        %c1_86 = arith.constant 1 : index
        %45 = arith.subi %44, %c1_86 : index
        %c8_87 = arith.constant 8 : index
        %46 = arith.cmpi slt, %45, %c8_87 : index
        scf.if %46 {
          %c1_97 = arith.constant 1 : index
          %c32768_98 = arith.constant 32768 : index
          nvgpu.mbarrier.arrive.expect_tx %4[%c1_97], %c32768_98, predicate = %6 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
          %c1_99 = arith.constant 1 : index
          %c64_100 = arith.constant 64 : index
          %57 = arith.muli %45, %c64_100 : index
          nvgpu.tma.async.load %3[%57, %7], %4[%c1_99] to %view_7, predicate = %6 : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<128x64xf16, #gpu.address_space<workgroup>>
          %c1_101 = arith.constant 1 : index
          %c64_102 = arith.constant 64 : index
          %58 = arith.muli %45, %c64_102 : index
          %c0_103 = arith.constant 0 : index
          %59 = arith.addi %8, %c0_103 : index
          nvgpu.tma.async.load %2[%59, %58], %4[%c1_101] to %view_10, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
          %c1_104 = arith.constant 1 : index
          %c64_105 = arith.constant 64 : index
          %60 = arith.muli %45, %c64_105 : index
          %c64_106 = arith.constant 64 : index
          %61 = arith.addi %8, %c64_106 : index
          nvgpu.tma.async.load %2[%61, %60], %4[%c1_104] to %view_11, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
        } else {
        }
        %c4_88 = arith.constant 4 : index
        %47 = arith.muli %arg15, %c4_88 : index
        %c3_89 = arith.constant 3 : index
        %48 = arith.addi %47, %c3_89 : index
        %c3_90 = arith.constant 3 : index
        %c1_91 = arith.constant 1 : index
        %49 = arith.andi %arg15, %c1_91 : index
        %c0_92 = arith.constant 0 : index
        %50 = arith.cmpi ne, %49, %c0_92 : index
        %c10000000_93 = arith.constant 10000000 : index
        nvgpu.mbarrier.try_wait.parity %4[%c3_90], %50, %c10000000_93 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
        %51 = nvgpu.warpgroup.generate.descriptor %view_17, %3 : memref<128x64xf16, #gpu.address_space<workgroup>>, <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> -> <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>>
        %52 = nvgpu.warpgroup.generate.descriptor %view_18, %2 : memref<64x128xf16, #gpu.address_space<workgroup>>, <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> -> <tensor = memref<64x128xf16, #gpu.address_space<workgroup>>>
        %53 = nvgpu.warpgroup.mma %51, %52, %43 {transposeB, waitGroup = 0 : i64} : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>>, <tensor = memref<64x128xf16, #gpu.address_space<workgroup>>>, <fragmented = vector<128x128xf32>> -> <fragmented = vector<128x128xf32>>
        gpu.barrier
        %c4_94 = arith.constant 4 : index
        %54 = arith.addi %48, %c4_94 : index
        %c1_95 = arith.constant 1 : index
        %55 = arith.subi %54, %c1_95 : index
        %c8_96 = arith.constant 8 : index
        %56 = arith.cmpi slt, %55, %c8_96 : index
        scf.if %56 {
          %c2_97 = arith.constant 2 : index
          %c32768_98 = arith.constant 32768 : index
          nvgpu.mbarrier.arrive.expect_tx %4[%c2_97], %c32768_98, predicate = %6 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
          %c2_99 = arith.constant 2 : index
          %c64_100 = arith.constant 64 : index
          %57 = arith.muli %55, %c64_100 : index
          nvgpu.tma.async.load %3[%57, %7], %4[%c2_99] to %view_12, predicate = %6 : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<128x64xf16, #gpu.address_space<workgroup>>
          %c2_101 = arith.constant 2 : index
          %c64_102 = arith.constant 64 : index
          %58 = arith.muli %55, %c64_102 : index
          %c0_103 = arith.constant 0 : index
          %59 = arith.addi %8, %c0_103 : index
          nvgpu.tma.async.load %2[%59, %58], %4[%c2_101] to %view_15, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
          %c2_104 = arith.constant 2 : index
          %c64_105 = arith.constant 64 : index
          %60 = arith.muli %55, %c64_105 : index
          %c64_106 = arith.constant 64 : index
          %61 = arith.addi %8, %c64_106 : index
          nvgpu.tma.async.load %2[%61, %60], %4[%c2_104] to %view_16, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
        } else {
        }
        scf.yield %53 : !nvgpu.warpgroup.accumulator<fragmented = vector<128x128xf32>>
      }
      nvvm.wgmma.wait.group.sync.aligned 0
      %subview = memref.subview %arg2[%7, %8] [128, 128] [1, 1] : memref<256x256xf32> to memref<128x128xf32, strided<[256, 1], offset: ?>>
      nvgpu.warpgroup.mma.store %16, %subview : <fragmented = vector<128x128xf32>> to memref<128x128xf32, strided<[256, 1], offset: ?>>
      gpu.terminator
    }
    return
  }
}
