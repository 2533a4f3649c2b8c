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
        %c4_189 = arith.constant 4 : index
        %497 = arith.muli %arg15, %c4_189 : index
        %c0_190 = arith.constant 0 : index
        %498 = arith.addi %497, %c0_190 : index
        %c0_191 = arith.constant 0 : index
        %c1_192 = arith.constant 1 : index
        %499 = arith.andi %arg15, %c1_192 : index
        %c0_193 = arith.constant 0 : index
        %500 = arith.cmpi ne, %499, %c0_193 : index
        %501 = nvgpu.mbarrier.get %4[%c0_191] : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> i64
        %502 = llvm.inttoptr %501 : i64 to !llvm.ptr<3>
        %503 = arith.extui %500 : i1 to i32
        scf.while : () -> () {
          %549 = nvvm.mbarrier.try_wait %502, %503 : !llvm.ptr<3>, i32 -> i1
          %true = arith.constant true
          %550 = arith.xori %549, %true : i1
          scf.condition(%550)
        } do {
          scf.yield
        }
        %504 = nvgpu.warpgroup.generate.descriptor %view, %3 : memref<128x64xf16, #gpu.address_space<workgroup>>, <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> -> <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>>
        %505 = nvgpu.warpgroup.generate.descriptor %view_3, %2 : memref<64x128xf16, #gpu.address_space<workgroup>>, <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> -> <tensor = memref<64x128xf16, #gpu.address_space<workgroup>>>
        %506 = nvgpu.warpgroup.mma %504, %505, %arg16 {transposeB, waitGroup = 0 : i64} : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>>, <tensor = memref<64x128xf16, #gpu.address_space<workgroup>>>, <fragmented = vector<128x128xf32>> -> <fragmented = vector<128x128xf32>>
        gpu.barrier
        %c4_194 = arith.constant 4 : index
        %507 = arith.addi %498, %c4_194 : index
        %c1_195 = arith.constant 1 : index
        %508 = arith.subi %507, %c1_195 : index
        %c8_196 = arith.constant 8 : index
        %509 = arith.cmpi slt, %508, %c8_196 : index
        scf.if %509 {
          %c3_221 = arith.constant 3 : index
          %c32768_222 = arith.constant 32768 : index
          nvgpu.mbarrier.arrive.expect_tx %4[%c3_221], %c32768_222, predicate = %6 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
          %c3_223 = arith.constant 3 : index
          %c64_224 = arith.constant 64 : index
          %549 = arith.muli %508, %c64_224 : index
          nvgpu.tma.async.load %3[%549, %7], %4[%c3_223] to %view_17, predicate = %6 : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<128x64xf16, #gpu.address_space<workgroup>>
          %c3_225 = arith.constant 3 : index
          %c64_226 = arith.constant 64 : index
          %550 = arith.muli %508, %c64_226 : index
          %c0_227 = arith.constant 0 : index
          %551 = arith.addi %8, %c0_227 : index
          nvgpu.tma.async.load %2[%551, %550], %4[%c3_225] to %view_20, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
          %c3_228 = arith.constant 3 : index
          %c64_229 = arith.constant 64 : index
          %552 = arith.muli %508, %c64_229 : index
          %c64_230 = arith.constant 64 : index
          %553 = arith.addi %8, %c64_230 : index
          nvgpu.tma.async.load %2[%553, %552], %4[%c3_228] to %view_21, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
        } else {
        }
        %c4_197 = arith.constant 4 : index
        %510 = arith.muli %arg15, %c4_197 : index
        %c1_198 = arith.constant 1 : index
        %511 = arith.addi %510, %c1_198 : index
        %c1_199 = arith.constant 1 : index
        %c1_200 = arith.constant 1 : index
        %512 = arith.andi %arg15, %c1_200 : index
        %c0_201 = arith.constant 0 : index
        %513 = arith.cmpi ne, %512, %c0_201 : index
        %514 = nvgpu.mbarrier.get %4[%c1_199] : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> i64
        %515 = llvm.inttoptr %514 : i64 to !llvm.ptr<3>
        %516 = arith.extui %513 : i1 to i32
        scf.while : () -> () {
          %549 = nvvm.mbarrier.try_wait %515, %516 : !llvm.ptr<3>, i32 -> i1
          %true = arith.constant true
          %550 = arith.xori %549, %true : i1
          scf.condition(%550)
        } do {
          scf.yield
        }
        %517 = nvgpu.warpgroup.generate.descriptor %view_7, %3 : memref<128x64xf16, #gpu.address_space<workgroup>>, <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> -> <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>>
        %518 = nvgpu.warpgroup.generate.descriptor %view_8, %2 : memref<64x128xf16, #gpu.address_space<workgroup>>, <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> -> <tensor = memref<64x128xf16, #gpu.address_space<workgroup>>>
        %519 = nvgpu.warpgroup.mma %517, %518, %506 {transposeB, waitGroup = 0 : i64} : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>>, <tensor = memref<64x128xf16, #gpu.address_space<workgroup>>>, <fragmented = vector<128x128xf32>> -> <fragmented = vector<128x128xf32>>
        gpu.barrier
        %c4_202 = arith.constant 4 : index
        %520 = arith.addi %511, %c4_202 : index
        %c1_203 = arith.constant 1 : index
        %521 = arith.subi %520, %c1_203 : index
        %c8_204 = arith.constant 8 : index
        %522 = arith.cmpi slt, %521, %c8_204 : index
        scf.if %522 {
          %c0_221 = arith.constant 0 : index
          %c32768_222 = arith.constant 32768 : index
          nvgpu.mbarrier.arrive.expect_tx %4[%c0_221], %c32768_222, predicate = %6 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
          %c0_223 = arith.constant 0 : index
          %c64_224 = arith.constant 64 : index
          %549 = arith.muli %521, %c64_224 : index
          nvgpu.tma.async.load %3[%549, %7], %4[%c0_223] to %view, predicate = %6 : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<128x64xf16, #gpu.address_space<workgroup>>
          %c0_225 = arith.constant 0 : index
          %c64_226 = arith.constant 64 : index
          %550 = arith.muli %521, %c64_226 : index
          %c0_227 = arith.constant 0 : index
          %551 = arith.addi %8, %c0_227 : index
          nvgpu.tma.async.load %2[%551, %550], %4[%c0_225] to %view_5, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
          %c0_228 = arith.constant 0 : index
          %c64_229 = arith.constant 64 : index
          %552 = arith.muli %521, %c64_229 : index
          %c64_230 = arith.constant 64 : index
          %553 = arith.addi %8, %c64_230 : index
          nvgpu.tma.async.load %2[%553, %552], %4[%c0_228] to %view_6, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
        } else {
        }
        %c4_205 = arith.constant 4 : index
        %523 = arith.muli %arg15, %c4_205 : index
        %c2_206 = arith.constant 2 : index
        %524 = arith.addi %523, %c2_206 : index
        %c2_207 = arith.constant 2 : index
        %c1_208 = arith.constant 1 : index
        %525 = arith.andi %arg15, %c1_208 : index
        %c0_209 = arith.constant 0 : index
        %526 = arith.cmpi ne, %525, %c0_209 : index
        %527 = nvgpu.mbarrier.get %4[%c2_207] : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> i64
        %528 = llvm.inttoptr %527 : i64 to !llvm.ptr<3>
        %529 = arith.extui %526 : i1 to i32
        scf.while : () -> () {
          %549 = nvvm.mbarrier.try_wait %528, %529 : !llvm.ptr<3>, i32 -> i1
          %true = arith.constant true
          %550 = arith.xori %549, %true : i1
          scf.condition(%550)
        } do {
          scf.yield
        }
        %530 = nvgpu.warpgroup.generate.descriptor %view_12, %3 : memref<128x64xf16, #gpu.address_space<workgroup>>, <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> -> <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>>
        %531 = nvgpu.warpgroup.generate.descriptor %view_13, %2 : memref<64x128xf16, #gpu.address_space<workgroup>>, <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> -> <tensor = memref<64x128xf16, #gpu.address_space<workgroup>>>
        %532 = nvgpu.warpgroup.mma %530, %531, %519 {transposeB, waitGroup = 0 : i64} : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>>, <tensor = memref<64x128xf16, #gpu.address_space<workgroup>>>, <fragmented = vector<128x128xf32>> -> <fragmented = vector<128x128xf32>>
        gpu.barrier
        %c4_210 = arith.constant 4 : index
        %533 = arith.addi %524, %c4_210 : index
        %c1_211 = arith.constant 1 : index
        %534 = arith.subi %533, %c1_211 : index
        %c8_212 = arith.constant 8 : index
        %535 = arith.cmpi slt, %534, %c8_212 : index
        scf.if %535 {
          %c1_221 = arith.constant 1 : index
          %c32768_222 = arith.constant 32768 : index
          nvgpu.mbarrier.arrive.expect_tx %4[%c1_221], %c32768_222, predicate = %6 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
          %c1_223 = arith.constant 1 : index
          %c64_224 = arith.constant 64 : index
          %549 = arith.muli %534, %c64_224 : index
          nvgpu.tma.async.load %3[%549, %7], %4[%c1_223] to %view_7, predicate = %6 : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<128x64xf16, #gpu.address_space<workgroup>>
          %c1_225 = arith.constant 1 : index
          %c64_226 = arith.constant 64 : index
          %550 = arith.muli %534, %c64_226 : index
          %c0_227 = arith.constant 0 : index
          %551 = arith.addi %8, %c0_227 : index
          nvgpu.tma.async.load %2[%551, %550], %4[%c1_225] to %view_10, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
          %c1_228 = arith.constant 1 : index
          %c64_229 = arith.constant 64 : index
          %552 = arith.muli %534, %c64_229 : index
          %c64_230 = arith.constant 64 : index
          %553 = arith.addi %8, %c64_230 : index
          nvgpu.tma.async.load %2[%553, %552], %4[%c1_228] to %view_11, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
        } else {
        }
        %c4_213 = arith.constant 4 : index
        %536 = arith.muli %arg15, %c4_213 : index
        %c3_214 = arith.constant 3 : index
        %537 = arith.addi %536, %c3_214 : index
        %c3_215 = arith.constant 3 : index
        %c1_216 = arith.constant 1 : index
        %538 = arith.andi %arg15, %c1_216 : index
        %c0_217 = arith.constant 0 : index
        %539 = arith.cmpi ne, %538, %c0_217 : index
        %540 = nvgpu.mbarrier.get %4[%c3_215] : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> i64
        %541 = llvm.inttoptr %540 : i64 to !llvm.ptr<3>
        %542 = arith.extui %539 : i1 to i32
        scf.while : () -> () {
          %549 = nvvm.mbarrier.try_wait %541, %542 : !llvm.ptr<3>, i32 -> i1
          %true = arith.constant true
          %550 = arith.xori %549, %true : i1
          scf.condition(%550)
        } do {
          scf.yield
        }
        %543 = nvgpu.warpgroup.generate.descriptor %view_17, %3 : memref<128x64xf16, #gpu.address_space<workgroup>>, <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> -> <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>>
        %544 = nvgpu.warpgroup.generate.descriptor %view_18, %2 : memref<64x128xf16, #gpu.address_space<workgroup>>, <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> -> <tensor = memref<64x128xf16, #gpu.address_space<workgroup>>>
        %545 = nvgpu.warpgroup.mma %543, %544, %532 {transposeB, waitGroup = 0 : i64} : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>>, <tensor = memref<64x128xf16, #gpu.address_space<workgroup>>>, <fragmented = vector<128x128xf32>> -> <fragmented = vector<128x128xf32>>
        gpu.barrier
        %c4_218 = arith.constant 4 : index
        %546 = arith.addi %537, %c4_218 : index
        %c1_219 = arith.constant 1 : index
        %547 = arith.subi %546, %c1_219 : index
        %c8_220 = arith.constant 8 : index
        %548 = arith.cmpi slt, %547, %c8_220 : index
        scf.if %548 {
          %c2_221 = arith.constant 2 : index
          %c32768_222 = arith.constant 32768 : index
          nvgpu.mbarrier.arrive.expect_tx %4[%c2_221], %c32768_222, predicate = %6 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
          %c2_223 = arith.constant 2 : index
          %c64_224 = arith.constant 64 : index
          %549 = arith.muli %547, %c64_224 : index
          nvgpu.tma.async.load %3[%549, %7], %4[%c2_223] to %view_12, predicate = %6 : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<128x64xf16, #gpu.address_space<workgroup>>
          %c2_225 = arith.constant 2 : index
          %c64_226 = arith.constant 64 : index
          %550 = arith.muli %547, %c64_226 : index
          %c0_227 = arith.constant 0 : index
          %551 = arith.addi %8, %c0_227 : index
          nvgpu.tma.async.load %2[%551, %550], %4[%c2_225] to %view_15, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
          %c2_228 = arith.constant 2 : index
          %c64_229 = arith.constant 64 : index
          %552 = arith.muli %547, %c64_229 : index
          %c64_230 = arith.constant 64 : index
          %553 = arith.addi %8, %c64_230 : index
          nvgpu.tma.async.load %2[%553, %552], %4[%c2_228] to %view_16, predicate = %6 : <tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4> -> memref<64x64xf16, #gpu.address_space<workgroup>>
        } else {
        }
        scf.yield %545 : !nvgpu.warpgroup.accumulator<fragmented = vector<128x128xf32>>
      }
      nvvm.wgmma.wait.group.sync.aligned 0
      %17 = builtin.unrealized_conversion_cast %16 : !nvgpu.warpgroup.accumulator<fragmented = vector<128x128xf32>> to !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)>
      %c128_64 = arith.constant 128 : index
      %18 = arith.remsi %arg6, %c128_64 : index
      %c0_65 = arith.constant 0 : index
      %19 = arith.cmpi ne, %18, %c0_65 : index
      %20 = arith.cmpi slt, %18, %c0_65 : index
      %21 = arith.cmpi slt, %c128_64, %c0_65 : index
      %22 = arith.cmpi ne, %20, %21 : i1
      %23 = arith.andi %19, %22 : i1
      %24 = arith.addi %18, %c128_64 : index
      %25 = arith.select %23, %24, %18 : index
      %c4 = arith.constant 4 : index
      %26 = arith.floordivsi %25, %c4 : index
      %c8 = arith.constant 8 : index
      %27 = arith.remsi %26, %c8 : index
      %c0_66 = arith.constant 0 : index
      %28 = arith.cmpi ne, %27, %c0_66 : index
      %29 = arith.cmpi slt, %27, %c0_66 : index
      %30 = arith.cmpi slt, %c8, %c0_66 : index
      %31 = arith.cmpi ne, %29, %30 : i1
      %32 = arith.andi %28, %31 : i1
      %33 = arith.addi %27, %c8 : index
      %34 = arith.select %32, %33, %27 : index
      %c8_67 = arith.constant 8 : index
      %35 = arith.floordivsi %26, %c8_67 : index
      %c16 = arith.constant 16 : index
      %36 = arith.muli %35, %c16 : index
      %37 = arith.addi %34, %36 : index
      %c4_68 = arith.constant 4 : index
      %38 = arith.remsi %25, %c4_68 : index
      %c0_69 = arith.constant 0 : index
      %39 = arith.cmpi ne, %38, %c0_69 : index
      %40 = arith.cmpi slt, %38, %c0_69 : index
      %41 = arith.cmpi slt, %c4_68, %c0_69 : index
      %42 = arith.cmpi ne, %40, %41 : i1
      %43 = arith.andi %39, %42 : i1
      %44 = arith.addi %38, %c4_68 : index
      %45 = arith.select %43, %44, %38 : index
      %c2_70 = arith.constant 2 : index
      %46 = arith.muli %45, %c2_70 : index
      %c4_71 = arith.constant 4 : index
      %47 = arith.floordivsi %25, %c4_71 : index
      %c8_72 = arith.constant 8 : index
      %48 = arith.floordivsi %47, %c8_72 : index
      %49 = llvm.extractvalue %17[0, 0] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %50 = llvm.extractvalue %17[0, 1] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %51 = vector.from_elements %49, %50 : vector<2xf32>
      %52 = arith.addi %7, %37 : index
      %c0_73 = arith.constant 0 : index
      %53 = arith.addi %52, %c0_73 : index
      %54 = arith.addi %8, %46 : index
      %c0_74 = arith.constant 0 : index
      %55 = arith.addi %54, %c0_74 : index
      vector.store %51, %arg2[%53, %55] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %56 = llvm.extractvalue %17[0, 2] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %57 = llvm.extractvalue %17[0, 3] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %58 = vector.from_elements %56, %57 : vector<2xf32>
      %59 = arith.addi %7, %37 : index
      %c8_75 = arith.constant 8 : index
      %60 = arith.addi %59, %c8_75 : index
      %61 = arith.addi %8, %46 : index
      %c0_76 = arith.constant 0 : index
      %62 = arith.addi %61, %c0_76 : index
      vector.store %58, %arg2[%60, %62] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %63 = llvm.extractvalue %17[0, 4] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %64 = llvm.extractvalue %17[0, 5] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %65 = vector.from_elements %63, %64 : vector<2xf32>
      %66 = arith.addi %7, %37 : index
      %c0_77 = arith.constant 0 : index
      %67 = arith.addi %66, %c0_77 : index
      %68 = arith.addi %8, %46 : index
      %c8_78 = arith.constant 8 : index
      %69 = arith.addi %68, %c8_78 : index
      vector.store %65, %arg2[%67, %69] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %70 = llvm.extractvalue %17[0, 6] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %71 = llvm.extractvalue %17[0, 7] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %72 = vector.from_elements %70, %71 : vector<2xf32>
      %73 = arith.addi %7, %37 : index
      %c8_79 = arith.constant 8 : index
      %74 = arith.addi %73, %c8_79 : index
      %75 = arith.addi %8, %46 : index
      %c8_80 = arith.constant 8 : index
      %76 = arith.addi %75, %c8_80 : index
      vector.store %72, %arg2[%74, %76] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %77 = llvm.extractvalue %17[0, 8] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %78 = llvm.extractvalue %17[0, 9] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %79 = vector.from_elements %77, %78 : vector<2xf32>
      %80 = arith.addi %7, %37 : index
      %c0_81 = arith.constant 0 : index
      %81 = arith.addi %80, %c0_81 : index
      %82 = arith.addi %8, %46 : index
      %c16_82 = arith.constant 16 : index
      %83 = arith.addi %82, %c16_82 : index
      vector.store %79, %arg2[%81, %83] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %84 = llvm.extractvalue %17[0, 10] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %85 = llvm.extractvalue %17[0, 11] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %86 = vector.from_elements %84, %85 : vector<2xf32>
      %87 = arith.addi %7, %37 : index
      %c8_83 = arith.constant 8 : index
      %88 = arith.addi %87, %c8_83 : index
      %89 = arith.addi %8, %46 : index
      %c16_84 = arith.constant 16 : index
      %90 = arith.addi %89, %c16_84 : index
      vector.store %86, %arg2[%88, %90] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %91 = llvm.extractvalue %17[0, 12] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %92 = llvm.extractvalue %17[0, 13] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %93 = vector.from_elements %91, %92 : vector<2xf32>
      %94 = arith.addi %7, %37 : index
      %c0_85 = arith.constant 0 : index
      %95 = arith.addi %94, %c0_85 : index
      %96 = arith.addi %8, %46 : index
      %c24 = arith.constant 24 : index
      %97 = arith.addi %96, %c24 : index
      vector.store %93, %arg2[%95, %97] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %98 = llvm.extractvalue %17[0, 14] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %99 = llvm.extractvalue %17[0, 15] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %100 = vector.from_elements %98, %99 : vector<2xf32>
      %101 = arith.addi %7, %37 : index
      %c8_86 = arith.constant 8 : index
      %102 = arith.addi %101, %c8_86 : index
      %103 = arith.addi %8, %46 : index
      %c24_87 = arith.constant 24 : index
      %104 = arith.addi %103, %c24_87 : index
      vector.store %100, %arg2[%102, %104] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %105 = llvm.extractvalue %17[0, 16] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %106 = llvm.extractvalue %17[0, 17] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %107 = vector.from_elements %105, %106 : vector<2xf32>
      %108 = arith.addi %7, %37 : index
      %c0_88 = arith.constant 0 : index
      %109 = arith.addi %108, %c0_88 : index
      %110 = arith.addi %8, %46 : index
      %c32 = arith.constant 32 : index
      %111 = arith.addi %110, %c32 : index
      vector.store %107, %arg2[%109, %111] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %112 = llvm.extractvalue %17[0, 18] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %113 = llvm.extractvalue %17[0, 19] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %114 = vector.from_elements %112, %113 : vector<2xf32>
      %115 = arith.addi %7, %37 : index
      %c8_89 = arith.constant 8 : index
      %116 = arith.addi %115, %c8_89 : index
      %117 = arith.addi %8, %46 : index
      %c32_90 = arith.constant 32 : index
      %118 = arith.addi %117, %c32_90 : index
      vector.store %114, %arg2[%116, %118] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %119 = llvm.extractvalue %17[0, 20] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %120 = llvm.extractvalue %17[0, 21] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %121 = vector.from_elements %119, %120 : vector<2xf32>
      %122 = arith.addi %7, %37 : index
      %c0_91 = arith.constant 0 : index
      %123 = arith.addi %122, %c0_91 : index
      %124 = arith.addi %8, %46 : index
      %c40 = arith.constant 40 : index
      %125 = arith.addi %124, %c40 : index
      vector.store %121, %arg2[%123, %125] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %126 = llvm.extractvalue %17[0, 22] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %127 = llvm.extractvalue %17[0, 23] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %128 = vector.from_elements %126, %127 : vector<2xf32>
      %129 = arith.addi %7, %37 : index
      %c8_92 = arith.constant 8 : index
      %130 = arith.addi %129, %c8_92 : index
      %131 = arith.addi %8, %46 : index
      %c40_93 = arith.constant 40 : index
      %132 = arith.addi %131, %c40_93 : index
      vector.store %128, %arg2[%130, %132] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %133 = llvm.extractvalue %17[0, 24] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %134 = llvm.extractvalue %17[0, 25] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %135 = vector.from_elements %133, %134 : vector<2xf32>
      %136 = arith.addi %7, %37 : index
      %c0_94 = arith.constant 0 : index
      %137 = arith.addi %136, %c0_94 : index
      %138 = arith.addi %8, %46 : index
      %c48 = arith.constant 48 : index
      %139 = arith.addi %138, %c48 : index
      vector.store %135, %arg2[%137, %139] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %140 = llvm.extractvalue %17[0, 26] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %141 = llvm.extractvalue %17[0, 27] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %142 = vector.from_elements %140, %141 : vector<2xf32>
      %143 = arith.addi %7, %37 : index
      %c8_95 = arith.constant 8 : index
      %144 = arith.addi %143, %c8_95 : index
      %145 = arith.addi %8, %46 : index
      %c48_96 = arith.constant 48 : index
      %146 = arith.addi %145, %c48_96 : index
      vector.store %142, %arg2[%144, %146] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %147 = llvm.extractvalue %17[0, 28] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %148 = llvm.extractvalue %17[0, 29] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %149 = vector.from_elements %147, %148 : vector<2xf32>
      %150 = arith.addi %7, %37 : index
      %c0_97 = arith.constant 0 : index
      %151 = arith.addi %150, %c0_97 : index
      %152 = arith.addi %8, %46 : index
      %c56 = arith.constant 56 : index
      %153 = arith.addi %152, %c56 : index
      vector.store %149, %arg2[%151, %153] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %154 = llvm.extractvalue %17[0, 30] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %155 = llvm.extractvalue %17[0, 31] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %156 = vector.from_elements %154, %155 : vector<2xf32>
      %157 = arith.addi %7, %37 : index
      %c8_98 = arith.constant 8 : index
      %158 = arith.addi %157, %c8_98 : index
      %159 = arith.addi %8, %46 : index
      %c56_99 = arith.constant 56 : index
      %160 = arith.addi %159, %c56_99 : index
      vector.store %156, %arg2[%158, %160] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %161 = llvm.extractvalue %17[0, 32] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %162 = llvm.extractvalue %17[0, 33] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %163 = vector.from_elements %161, %162 : vector<2xf32>
      %164 = arith.addi %7, %37 : index
      %c0_100 = arith.constant 0 : index
      %165 = arith.addi %164, %c0_100 : index
      %166 = arith.addi %8, %46 : index
      %c64_101 = arith.constant 64 : index
      %167 = arith.addi %166, %c64_101 : index
      vector.store %163, %arg2[%165, %167] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %168 = llvm.extractvalue %17[0, 34] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %169 = llvm.extractvalue %17[0, 35] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %170 = vector.from_elements %168, %169 : vector<2xf32>
      %171 = arith.addi %7, %37 : index
      %c8_102 = arith.constant 8 : index
      %172 = arith.addi %171, %c8_102 : index
      %173 = arith.addi %8, %46 : index
      %c64_103 = arith.constant 64 : index
      %174 = arith.addi %173, %c64_103 : index
      vector.store %170, %arg2[%172, %174] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %175 = llvm.extractvalue %17[0, 36] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %176 = llvm.extractvalue %17[0, 37] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %177 = vector.from_elements %175, %176 : vector<2xf32>
      %178 = arith.addi %7, %37 : index
      %c0_104 = arith.constant 0 : index
      %179 = arith.addi %178, %c0_104 : index
      %180 = arith.addi %8, %46 : index
      %c72 = arith.constant 72 : index
      %181 = arith.addi %180, %c72 : index
      vector.store %177, %arg2[%179, %181] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %182 = llvm.extractvalue %17[0, 38] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %183 = llvm.extractvalue %17[0, 39] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %184 = vector.from_elements %182, %183 : vector<2xf32>
      %185 = arith.addi %7, %37 : index
      %c8_105 = arith.constant 8 : index
      %186 = arith.addi %185, %c8_105 : index
      %187 = arith.addi %8, %46 : index
      %c72_106 = arith.constant 72 : index
      %188 = arith.addi %187, %c72_106 : index
      vector.store %184, %arg2[%186, %188] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %189 = llvm.extractvalue %17[0, 40] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %190 = llvm.extractvalue %17[0, 41] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %191 = vector.from_elements %189, %190 : vector<2xf32>
      %192 = arith.addi %7, %37 : index
      %c0_107 = arith.constant 0 : index
      %193 = arith.addi %192, %c0_107 : index
      %194 = arith.addi %8, %46 : index
      %c80 = arith.constant 80 : index
      %195 = arith.addi %194, %c80 : index
      vector.store %191, %arg2[%193, %195] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %196 = llvm.extractvalue %17[0, 42] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %197 = llvm.extractvalue %17[0, 43] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %198 = vector.from_elements %196, %197 : vector<2xf32>
      %199 = arith.addi %7, %37 : index
      %c8_108 = arith.constant 8 : index
      %200 = arith.addi %199, %c8_108 : index
      %201 = arith.addi %8, %46 : index
      %c80_109 = arith.constant 80 : index
      %202 = arith.addi %201, %c80_109 : index
      vector.store %198, %arg2[%200, %202] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %203 = llvm.extractvalue %17[0, 44] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %204 = llvm.extractvalue %17[0, 45] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %205 = vector.from_elements %203, %204 : vector<2xf32>
      %206 = arith.addi %7, %37 : index
      %c0_110 = arith.constant 0 : index
      %207 = arith.addi %206, %c0_110 : index
      %208 = arith.addi %8, %46 : index
      %c88 = arith.constant 88 : index
      %209 = arith.addi %208, %c88 : index
      vector.store %205, %arg2[%207, %209] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %210 = llvm.extractvalue %17[0, 46] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %211 = llvm.extractvalue %17[0, 47] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %212 = vector.from_elements %210, %211 : vector<2xf32>
      %213 = arith.addi %7, %37 : index
      %c8_111 = arith.constant 8 : index
      %214 = arith.addi %213, %c8_111 : index
      %215 = arith.addi %8, %46 : index
      %c88_112 = arith.constant 88 : index
      %216 = arith.addi %215, %c88_112 : index
      vector.store %212, %arg2[%214, %216] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %217 = llvm.extractvalue %17[0, 48] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %218 = llvm.extractvalue %17[0, 49] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %219 = vector.from_elements %217, %218 : vector<2xf32>
      %220 = arith.addi %7, %37 : index
      %c0_113 = arith.constant 0 : index
      %221 = arith.addi %220, %c0_113 : index
      %222 = arith.addi %8, %46 : index
      %c96 = arith.constant 96 : index
      %223 = arith.addi %222, %c96 : index
      vector.store %219, %arg2[%221, %223] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %224 = llvm.extractvalue %17[0, 50] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %225 = llvm.extractvalue %17[0, 51] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %226 = vector.from_elements %224, %225 : vector<2xf32>
      %227 = arith.addi %7, %37 : index
      %c8_114 = arith.constant 8 : index
      %228 = arith.addi %227, %c8_114 : index
      %229 = arith.addi %8, %46 : index
      %c96_115 = arith.constant 96 : index
      %230 = arith.addi %229, %c96_115 : index
      vector.store %226, %arg2[%228, %230] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %231 = llvm.extractvalue %17[0, 52] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %232 = llvm.extractvalue %17[0, 53] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %233 = vector.from_elements %231, %232 : vector<2xf32>
      %234 = arith.addi %7, %37 : index
      %c0_116 = arith.constant 0 : index
      %235 = arith.addi %234, %c0_116 : index
      %236 = arith.addi %8, %46 : index
      %c104 = arith.constant 104 : index
      %237 = arith.addi %236, %c104 : index
      vector.store %233, %arg2[%235, %237] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %238 = llvm.extractvalue %17[0, 54] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %239 = llvm.extractvalue %17[0, 55] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %240 = vector.from_elements %238, %239 : vector<2xf32>
      %241 = arith.addi %7, %37 : index
      %c8_117 = arith.constant 8 : index
      %242 = arith.addi %241, %c8_117 : index
      %243 = arith.addi %8, %46 : index
      %c104_118 = arith.constant 104 : index
      %244 = arith.addi %243, %c104_118 : index
      vector.store %240, %arg2[%242, %244] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %245 = llvm.extractvalue %17[0, 56] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %246 = llvm.extractvalue %17[0, 57] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %247 = vector.from_elements %245, %246 : vector<2xf32>
      %248 = arith.addi %7, %37 : index
      %c0_119 = arith.constant 0 : index
      %249 = arith.addi %248, %c0_119 : index
      %250 = arith.addi %8, %46 : index
      %c112 = arith.constant 112 : index
      %251 = arith.addi %250, %c112 : index
      vector.store %247, %arg2[%249, %251] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %252 = llvm.extractvalue %17[0, 58] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %253 = llvm.extractvalue %17[0, 59] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %254 = vector.from_elements %252, %253 : vector<2xf32>
      %255 = arith.addi %7, %37 : index
      %c8_120 = arith.constant 8 : index
      %256 = arith.addi %255, %c8_120 : index
      %257 = arith.addi %8, %46 : index
      %c112_121 = arith.constant 112 : index
      %258 = arith.addi %257, %c112_121 : index
      vector.store %254, %arg2[%256, %258] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %259 = llvm.extractvalue %17[0, 60] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %260 = llvm.extractvalue %17[0, 61] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %261 = vector.from_elements %259, %260 : vector<2xf32>
      %262 = arith.addi %7, %37 : index
      %c0_122 = arith.constant 0 : index
      %263 = arith.addi %262, %c0_122 : index
      %264 = arith.addi %8, %46 : index
      %c120 = arith.constant 120 : index
      %265 = arith.addi %264, %c120 : index
      vector.store %261, %arg2[%263, %265] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %266 = llvm.extractvalue %17[0, 62] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %267 = llvm.extractvalue %17[0, 63] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %268 = vector.from_elements %266, %267 : vector<2xf32>
      %269 = arith.addi %7, %37 : index
      %c8_123 = arith.constant 8 : index
      %270 = arith.addi %269, %c8_123 : index
      %271 = arith.addi %8, %46 : index
      %c120_124 = arith.constant 120 : index
      %272 = arith.addi %271, %c120_124 : index
      vector.store %268, %arg2[%270, %272] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %273 = llvm.extractvalue %17[1, 0] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %274 = llvm.extractvalue %17[1, 1] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %275 = vector.from_elements %273, %274 : vector<2xf32>
      %276 = arith.addi %7, %37 : index
      %c64_125 = arith.constant 64 : index
      %277 = arith.addi %276, %c64_125 : index
      %278 = arith.addi %8, %46 : index
      %c0_126 = arith.constant 0 : index
      %279 = arith.addi %278, %c0_126 : index
      vector.store %275, %arg2[%277, %279] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %280 = llvm.extractvalue %17[1, 2] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %281 = llvm.extractvalue %17[1, 3] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %282 = vector.from_elements %280, %281 : vector<2xf32>
      %283 = arith.addi %7, %37 : index
      %c72_127 = arith.constant 72 : index
      %284 = arith.addi %283, %c72_127 : index
      %285 = arith.addi %8, %46 : index
      %c0_128 = arith.constant 0 : index
      %286 = arith.addi %285, %c0_128 : index
      vector.store %282, %arg2[%284, %286] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %287 = llvm.extractvalue %17[1, 4] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %288 = llvm.extractvalue %17[1, 5] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %289 = vector.from_elements %287, %288 : vector<2xf32>
      %290 = arith.addi %7, %37 : index
      %c64_129 = arith.constant 64 : index
      %291 = arith.addi %290, %c64_129 : index
      %292 = arith.addi %8, %46 : index
      %c8_130 = arith.constant 8 : index
      %293 = arith.addi %292, %c8_130 : index
      vector.store %289, %arg2[%291, %293] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %294 = llvm.extractvalue %17[1, 6] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %295 = llvm.extractvalue %17[1, 7] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %296 = vector.from_elements %294, %295 : vector<2xf32>
      %297 = arith.addi %7, %37 : index
      %c72_131 = arith.constant 72 : index
      %298 = arith.addi %297, %c72_131 : index
      %299 = arith.addi %8, %46 : index
      %c8_132 = arith.constant 8 : index
      %300 = arith.addi %299, %c8_132 : index
      vector.store %296, %arg2[%298, %300] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %301 = llvm.extractvalue %17[1, 8] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %302 = llvm.extractvalue %17[1, 9] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %303 = vector.from_elements %301, %302 : vector<2xf32>
      %304 = arith.addi %7, %37 : index
      %c64_133 = arith.constant 64 : index
      %305 = arith.addi %304, %c64_133 : index
      %306 = arith.addi %8, %46 : index
      %c16_134 = arith.constant 16 : index
      %307 = arith.addi %306, %c16_134 : index
      vector.store %303, %arg2[%305, %307] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %308 = llvm.extractvalue %17[1, 10] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %309 = llvm.extractvalue %17[1, 11] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %310 = vector.from_elements %308, %309 : vector<2xf32>
      %311 = arith.addi %7, %37 : index
      %c72_135 = arith.constant 72 : index
      %312 = arith.addi %311, %c72_135 : index
      %313 = arith.addi %8, %46 : index
      %c16_136 = arith.constant 16 : index
      %314 = arith.addi %313, %c16_136 : index
      vector.store %310, %arg2[%312, %314] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %315 = llvm.extractvalue %17[1, 12] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %316 = llvm.extractvalue %17[1, 13] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %317 = vector.from_elements %315, %316 : vector<2xf32>
      %318 = arith.addi %7, %37 : index
      %c64_137 = arith.constant 64 : index
      %319 = arith.addi %318, %c64_137 : index
      %320 = arith.addi %8, %46 : index
      %c24_138 = arith.constant 24 : index
      %321 = arith.addi %320, %c24_138 : index
      vector.store %317, %arg2[%319, %321] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %322 = llvm.extractvalue %17[1, 14] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %323 = llvm.extractvalue %17[1, 15] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %324 = vector.from_elements %322, %323 : vector<2xf32>
      %325 = arith.addi %7, %37 : index
      %c72_139 = arith.constant 72 : index
      %326 = arith.addi %325, %c72_139 : index
      %327 = arith.addi %8, %46 : index
      %c24_140 = arith.constant 24 : index
      %328 = arith.addi %327, %c24_140 : index
      vector.store %324, %arg2[%326, %328] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %329 = llvm.extractvalue %17[1, 16] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %330 = llvm.extractvalue %17[1, 17] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %331 = vector.from_elements %329, %330 : vector<2xf32>
      %332 = arith.addi %7, %37 : index
      %c64_141 = arith.constant 64 : index
      %333 = arith.addi %332, %c64_141 : index
      %334 = arith.addi %8, %46 : index
      %c32_142 = arith.constant 32 : index
      %335 = arith.addi %334, %c32_142 : index
      vector.store %331, %arg2[%333, %335] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %336 = llvm.extractvalue %17[1, 18] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %337 = llvm.extractvalue %17[1, 19] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %338 = vector.from_elements %336, %337 : vector<2xf32>
      %339 = arith.addi %7, %37 : index
      %c72_143 = arith.constant 72 : index
      %340 = arith.addi %339, %c72_143 : index
      %341 = arith.addi %8, %46 : index
      %c32_144 = arith.constant 32 : index
      %342 = arith.addi %341, %c32_144 : index
      vector.store %338, %arg2[%340, %342] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %343 = llvm.extractvalue %17[1, 20] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %344 = llvm.extractvalue %17[1, 21] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %345 = vector.from_elements %343, %344 : vector<2xf32>
      %346 = arith.addi %7, %37 : index
      %c64_145 = arith.constant 64 : index
      %347 = arith.addi %346, %c64_145 : index
      %348 = arith.addi %8, %46 : index
      %c40_146 = arith.constant 40 : index
      %349 = arith.addi %348, %c40_146 : index
      vector.store %345, %arg2[%347, %349] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %350 = llvm.extractvalue %17[1, 22] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %351 = llvm.extractvalue %17[1, 23] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %352 = vector.from_elements %350, %351 : vector<2xf32>
      %353 = arith.addi %7, %37 : index
      %c72_147 = arith.constant 72 : index
      %354 = arith.addi %353, %c72_147 : index
      %355 = arith.addi %8, %46 : index
      %c40_148 = arith.constant 40 : index
      %356 = arith.addi %355, %c40_148 : index
      vector.store %352, %arg2[%354, %356] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %357 = llvm.extractvalue %17[1, 24] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %358 = llvm.extractvalue %17[1, 25] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %359 = vector.from_elements %357, %358 : vector<2xf32>
      %360 = arith.addi %7, %37 : index
      %c64_149 = arith.constant 64 : index
      %361 = arith.addi %360, %c64_149 : index
      %362 = arith.addi %8, %46 : index
      %c48_150 = arith.constant 48 : index
      %363 = arith.addi %362, %c48_150 : index
      vector.store %359, %arg2[%361, %363] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %364 = llvm.extractvalue %17[1, 26] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %365 = llvm.extractvalue %17[1, 27] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %366 = vector.from_elements %364, %365 : vector<2xf32>
      %367 = arith.addi %7, %37 : index
      %c72_151 = arith.constant 72 : index
      %368 = arith.addi %367, %c72_151 : index
      %369 = arith.addi %8, %46 : index
      %c48_152 = arith.constant 48 : index
      %370 = arith.addi %369, %c48_152 : index
      vector.store %366, %arg2[%368, %370] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %371 = llvm.extractvalue %17[1, 28] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %372 = llvm.extractvalue %17[1, 29] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %373 = vector.from_elements %371, %372 : vector<2xf32>
      %374 = arith.addi %7, %37 : index
      %c64_153 = arith.constant 64 : index
      %375 = arith.addi %374, %c64_153 : index
      %376 = arith.addi %8, %46 : index
      %c56_154 = arith.constant 56 : index
      %377 = arith.addi %376, %c56_154 : index
      vector.store %373, %arg2[%375, %377] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %378 = llvm.extractvalue %17[1, 30] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %379 = llvm.extractvalue %17[1, 31] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %380 = vector.from_elements %378, %379 : vector<2xf32>
      %381 = arith.addi %7, %37 : index
      %c72_155 = arith.constant 72 : index
      %382 = arith.addi %381, %c72_155 : index
      %383 = arith.addi %8, %46 : index
      %c56_156 = arith.constant 56 : index
      %384 = arith.addi %383, %c56_156 : index
      vector.store %380, %arg2[%382, %384] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %385 = llvm.extractvalue %17[1, 32] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %386 = llvm.extractvalue %17[1, 33] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %387 = vector.from_elements %385, %386 : vector<2xf32>
      %388 = arith.addi %7, %37 : index
      %c64_157 = arith.constant 64 : index
      %389 = arith.addi %388, %c64_157 : index
      %390 = arith.addi %8, %46 : index
      %c64_158 = arith.constant 64 : index
      %391 = arith.addi %390, %c64_158 : index
      vector.store %387, %arg2[%389, %391] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %392 = llvm.extractvalue %17[1, 34] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %393 = llvm.extractvalue %17[1, 35] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %394 = vector.from_elements %392, %393 : vector<2xf32>
      %395 = arith.addi %7, %37 : index
      %c72_159 = arith.constant 72 : index
      %396 = arith.addi %395, %c72_159 : index
      %397 = arith.addi %8, %46 : index
      %c64_160 = arith.constant 64 : index
      %398 = arith.addi %397, %c64_160 : index
      vector.store %394, %arg2[%396, %398] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %399 = llvm.extractvalue %17[1, 36] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %400 = llvm.extractvalue %17[1, 37] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %401 = vector.from_elements %399, %400 : vector<2xf32>
      %402 = arith.addi %7, %37 : index
      %c64_161 = arith.constant 64 : index
      %403 = arith.addi %402, %c64_161 : index
      %404 = arith.addi %8, %46 : index
      %c72_162 = arith.constant 72 : index
      %405 = arith.addi %404, %c72_162 : index
      vector.store %401, %arg2[%403, %405] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %406 = llvm.extractvalue %17[1, 38] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %407 = llvm.extractvalue %17[1, 39] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %408 = vector.from_elements %406, %407 : vector<2xf32>
      %409 = arith.addi %7, %37 : index
      %c72_163 = arith.constant 72 : index
      %410 = arith.addi %409, %c72_163 : index
      %411 = arith.addi %8, %46 : index
      %c72_164 = arith.constant 72 : index
      %412 = arith.addi %411, %c72_164 : index
      vector.store %408, %arg2[%410, %412] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %413 = llvm.extractvalue %17[1, 40] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %414 = llvm.extractvalue %17[1, 41] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %415 = vector.from_elements %413, %414 : vector<2xf32>
      %416 = arith.addi %7, %37 : index
      %c64_165 = arith.constant 64 : index
      %417 = arith.addi %416, %c64_165 : index
      %418 = arith.addi %8, %46 : index
      %c80_166 = arith.constant 80 : index
      %419 = arith.addi %418, %c80_166 : index
      vector.store %415, %arg2[%417, %419] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %420 = llvm.extractvalue %17[1, 42] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %421 = llvm.extractvalue %17[1, 43] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %422 = vector.from_elements %420, %421 : vector<2xf32>
      %423 = arith.addi %7, %37 : index
      %c72_167 = arith.constant 72 : index
      %424 = arith.addi %423, %c72_167 : index
      %425 = arith.addi %8, %46 : index
      %c80_168 = arith.constant 80 : index
      %426 = arith.addi %425, %c80_168 : index
      vector.store %422, %arg2[%424, %426] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %427 = llvm.extractvalue %17[1, 44] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %428 = llvm.extractvalue %17[1, 45] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %429 = vector.from_elements %427, %428 : vector<2xf32>
      %430 = arith.addi %7, %37 : index
      %c64_169 = arith.constant 64 : index
      %431 = arith.addi %430, %c64_169 : index
      %432 = arith.addi %8, %46 : index
      %c88_170 = arith.constant 88 : index
      %433 = arith.addi %432, %c88_170 : index
      vector.store %429, %arg2[%431, %433] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %434 = llvm.extractvalue %17[1, 46] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %435 = llvm.extractvalue %17[1, 47] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %436 = vector.from_elements %434, %435 : vector<2xf32>
      %437 = arith.addi %7, %37 : index
      %c72_171 = arith.constant 72 : index
      %438 = arith.addi %437, %c72_171 : index
      %439 = arith.addi %8, %46 : index
      %c88_172 = arith.constant 88 : index
      %440 = arith.addi %439, %c88_172 : index
      vector.store %436, %arg2[%438, %440] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %441 = llvm.extractvalue %17[1, 48] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %442 = llvm.extractvalue %17[1, 49] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %443 = vector.from_elements %441, %442 : vector<2xf32>
      %444 = arith.addi %7, %37 : index
      %c64_173 = arith.constant 64 : index
      %445 = arith.addi %444, %c64_173 : index
      %446 = arith.addi %8, %46 : index
      %c96_174 = arith.constant 96 : index
      %447 = arith.addi %446, %c96_174 : index
      vector.store %443, %arg2[%445, %447] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %448 = llvm.extractvalue %17[1, 50] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %449 = llvm.extractvalue %17[1, 51] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %450 = vector.from_elements %448, %449 : vector<2xf32>
      %451 = arith.addi %7, %37 : index
      %c72_175 = arith.constant 72 : index
      %452 = arith.addi %451, %c72_175 : index
      %453 = arith.addi %8, %46 : index
      %c96_176 = arith.constant 96 : index
      %454 = arith.addi %453, %c96_176 : index
      vector.store %450, %arg2[%452, %454] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %455 = llvm.extractvalue %17[1, 52] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %456 = llvm.extractvalue %17[1, 53] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %457 = vector.from_elements %455, %456 : vector<2xf32>
      %458 = arith.addi %7, %37 : index
      %c64_177 = arith.constant 64 : index
      %459 = arith.addi %458, %c64_177 : index
      %460 = arith.addi %8, %46 : index
      %c104_178 = arith.constant 104 : index
      %461 = arith.addi %460, %c104_178 : index
      vector.store %457, %arg2[%459, %461] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %462 = llvm.extractvalue %17[1, 54] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %463 = llvm.extractvalue %17[1, 55] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %464 = vector.from_elements %462, %463 : vector<2xf32>
      %465 = arith.addi %7, %37 : index
      %c72_179 = arith.constant 72 : index
      %466 = arith.addi %465, %c72_179 : index
      %467 = arith.addi %8, %46 : index
      %c104_180 = arith.constant 104 : index
      %468 = arith.addi %467, %c104_180 : index
      vector.store %464, %arg2[%466, %468] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %469 = llvm.extractvalue %17[1, 56] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %470 = llvm.extractvalue %17[1, 57] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %471 = vector.from_elements %469, %470 : vector<2xf32>
      %472 = arith.addi %7, %37 : index
      %c64_181 = arith.constant 64 : index
      %473 = arith.addi %472, %c64_181 : index
      %474 = arith.addi %8, %46 : index
      %c112_182 = arith.constant 112 : index
      %475 = arith.addi %474, %c112_182 : index
      vector.store %471, %arg2[%473, %475] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %476 = llvm.extractvalue %17[1, 58] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %477 = llvm.extractvalue %17[1, 59] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %478 = vector.from_elements %476, %477 : vector<2xf32>
      %479 = arith.addi %7, %37 : index
      %c72_183 = arith.constant 72 : index
      %480 = arith.addi %479, %c72_183 : index
      %481 = arith.addi %8, %46 : index
      %c112_184 = arith.constant 112 : index
      %482 = arith.addi %481, %c112_184 : index
      vector.store %478, %arg2[%480, %482] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %483 = llvm.extractvalue %17[1, 60] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %484 = llvm.extractvalue %17[1, 61] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %485 = vector.from_elements %483, %484 : vector<2xf32>
      %486 = arith.addi %7, %37 : index
      %c64_185 = arith.constant 64 : index
      %487 = arith.addi %486, %c64_185 : index
      %488 = arith.addi %8, %46 : index
      %c120_186 = arith.constant 120 : index
      %489 = arith.addi %488, %c120_186 : index
      vector.store %485, %arg2[%487, %489] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      %490 = llvm.extractvalue %17[1, 62] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %491 = llvm.extractvalue %17[1, 63] : !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)> 
      %492 = vector.from_elements %490, %491 : vector<2xf32>
      %493 = arith.addi %7, %37 : index
      %c72_187 = arith.constant 72 : index
      %494 = arith.addi %493, %c72_187 : index
      %495 = arith.addi %8, %46 : index
      %c120_188 = arith.constant 120 : index
      %496 = arith.addi %495, %c120_188 : index
      vector.store %492, %arg2[%494, %496] {alignment = 8 : i64} : memref<256x256xf32>, vector<2xf32>
      gpu.terminator
    }
    return
  }
}
