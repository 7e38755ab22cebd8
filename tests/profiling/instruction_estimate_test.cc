// profiling/instruction_estimate.h on a hand-written nvdisasm listing whose weights
// follow by hand: a prologue (once per warp), a loop whose load and store are matched
// to counted requests, a nested loop without anchors, and a subroutine (weight 0).
#include "profiling/instruction_estimate.h"

#include <gtest/gtest.h>

#include "artifact/stitch_emu_counters.h"

namespace stitch::profiling {
namespace {

constexpr const char* kListing = R"(	.target	sm_90

//--------------------- .text.k_kernel    --------------------------
	.section	.text.k_kernel,"ax",@progbits
k_kernel:
.text.k_kernel:
	//## File "/out/kernels/k.cu", line 10
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   IMAD.WIDE.U32 R2, R0, 0x4, RZ ;
.L_x_0:
	//## File "/out/kernels/k.cu", line 20 inlined at "/out/kernels/k.cu", line 30
	//## File "/out/kernels/k.cu", line 30
        /*0020*/                   LDG.E R4, desc[UR4][R2.64] ;
	//## File "/out/kernels/k.cu", line 31
        /*0030*/                   FFMA R4, R4, 2, RZ ;
.L_x_1:
        /*0040*/                   MUFU.EX2 R5, R4 ;
        /*0050*/               @P1 BRA `(.L_x_1) ;
        /*0060*/                   DADD R6, R6, R8 ;
        /*0070*/                   STG.E desc[UR4][R2.64], R4 ;
        /*0080*/                   CALL.REL.NOINC `($__internal_0_$__cuda_sm20_div_u64) ;
        /*0090*/               @P0 BRA `(.L_x_0) ;
        /*00a0*/                   EXIT ;
        .weak           $__internal_0_$__cuda_sm20_div_u64
$__internal_0_$__cuda_sm20_div_u64:
        /*00b0*/                   IMAD R0, R0, R1, RZ ;
        /*00c0*/                   RET.REL.NODEC R2 `(k_kernel) ;

//--------------------- .nv.info.k_kernel      --------------------------
)";

TEST(InstructionEstimate, ClassifiesOpcodes) {
  EXPECT_EQ(classify_sass_opcode("FFMA"), InstructionClass::kFp32);
  EXPECT_EQ(classify_sass_opcode("DFMA"), InstructionClass::kFp64);
  EXPECT_EQ(classify_sass_opcode("F2F.F64.F32"), InstructionClass::kFp64);
  EXPECT_EQ(classify_sass_opcode("I2F.U32"), InstructionClass::kSpecial);
  EXPECT_EQ(classify_sass_opcode("MUFU.RCP"), InstructionClass::kSpecial);
  EXPECT_EQ(classify_sass_opcode("IMAD.WIDE.U32"), InstructionClass::kInteger);
  EXPECT_EQ(classify_sass_opcode("LDG.E.CONSTANT"), InstructionClass::kMemory);
  EXPECT_EQ(classify_sass_opcode("BRA"), InstructionClass::kControl);
  EXPECT_EQ(sass_access_kind("LDG.E.CONSTANT"), kStitchEmuGlobalLoad);
  EXPECT_EQ(sass_access_kind("STS.128"), kStitchEmuSharedStore);
  EXPECT_EQ(sass_access_kind("LDC.64"), -1);
}

TEST(InstructionEstimate, ParsesListing) {
  Result<std::vector<SassKernel>> parsed = parse_sass(kListing);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
  ASSERT_EQ(parsed->size(), 1u);
  const SassKernel& k = (*parsed)[0];
  EXPECT_EQ(k.name, "k_kernel");
  ASSERT_EQ(k.instructions.size(), 13u);
  const SassInstruction& load = k.instructions[2];
  EXPECT_EQ(load.opcode, "LDG.E");
  EXPECT_EQ(load.file, "k.cu");
  EXPECT_EQ(load.line, 20);
  EXPECT_EQ(load.caller_line, 30);
  EXPECT_EQ(k.instructions[4].line, 31);  // carried over from the previous annotation
  EXPECT_EQ(k.instructions[5].target, 0x40);
  EXPECT_EQ(k.instructions[9].target, 0x20);
  EXPECT_FALSE(k.instructions[10].subroutine);
  EXPECT_TRUE(k.instructions[11].subroutine);
}

TEST(InstructionEstimate, WeightsByLoopsAndAnchors) {
  Result<std::vector<SassKernel>> parsed = parse_sass(kListing);
  ASSERT_TRUE(parsed.is_ok());
  // The load ran 100 warp-level requests (its location with the caller), the store 100
  // (matched by line: the host compiler did not inline it the same way).
  std::map<AccessLocation, uint64_t> requests = {
      {{"k.cu", 20, "k.cu", 30, kStitchEmuGlobalLoad}, 100},
      {{"k.cu", 31, "k.cu", 99, kStitchEmuGlobalStore}, 100},
  };
  const InstructionCount count = count_instructions(*parsed, requests, 8);
  EXPECT_EQ(count.static_instructions, 11);
  EXPECT_EQ(count.anchors, 2);
  EXPECT_EQ(count.matched_anchors, 2);
  // Outer loop [0x20, 0x90]: 8 instructions x 100, less the inner loop's 2 instructions,
  // which have no anchor and so take the outer loop's 100 too. Prologue and EXIT: 8 each.
  const cost_model::InstructionEstimate& e = count.estimate;
  EXPECT_DOUBLE_EQ(e.integer, 8);            // IMAD.WIDE
  EXPECT_DOUBLE_EQ(e.fp32, 100);             // FFMA
  EXPECT_DOUBLE_EQ(e.special, 100);          // MUFU
  EXPECT_DOUBLE_EQ(e.fp64, 100);             // DADD
  EXPECT_DOUBLE_EQ(e.memory, 200);           // LDG, STG
  EXPECT_DOUBLE_EQ(e.control, 8 + 300 + 8);  // S2R; 2 BRA + CALL; EXIT
  // Without requests every loop runs once per warp.
  const InstructionCount unmatched = count_instructions(*parsed, {}, 8);
  EXPECT_EQ(unmatched.matched_anchors, 0);
  EXPECT_DOUBLE_EQ(unmatched.estimate.total(), 11 * 8);
}

// A loop of three loads: two unrolled copies of line 40 (one SASS load each) and one
// load of line 41 that nvcc merged across four unrolled iterations (the recommender's
// embedding id), so its location counted 4 requests per trip.
constexpr const char* kMergedListing = R"(	.target	sm_90

//--------------------- .text.m_kernel    --------------------------
	.section	.text.m_kernel,"ax",@progbits
m_kernel:
.text.m_kernel:
.L_x_0:
	//## File "/out/kernels/m.cu", line 41
        /*0000*/                   LDG.E.64 R6, desc[UR4][R2.64] ;
	//## File "/out/kernels/m.cu", line 40
        /*0010*/                   LDG.E R4, desc[UR4][R2.64] ;
        /*0020*/                   LDG.E R5, desc[UR4][R2.64+0x20] ;
        /*0030*/                   FFMA R4, R4, R5, RZ ;
        /*0040*/               @P0 BRA `(.L_x_0) ;
        /*0050*/                   EXIT ;
)";

TEST(InstructionEstimate, LoopRunsAsOftenAsItsMedianAnchor) {
  Result<std::vector<SassKernel>> parsed = parse_sass(kMergedListing);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
  // 50 trips: line 40's two loads ran 100 requests (50 each), line 41's merged load 200.
  std::map<AccessLocation, uint64_t> requests = {
      {{"m.cu", 40, "", 0, kStitchEmuGlobalLoad}, 100},
      {{"m.cu", 41, "", 0, kStitchEmuGlobalLoad}, 200},
  };
  const InstructionCount count = count_instructions(*parsed, requests, 1);
  EXPECT_EQ(count.matched_anchors, 3);
  // The anchors say 200, 50, 50: the loop runs 50 times (the most executed would say 200).
  EXPECT_DOUBLE_EQ(count.estimate.fp32, 50);
  EXPECT_DOUBLE_EQ(count.estimate.memory, 150);
  EXPECT_DOUBLE_EQ(count.estimate.control, 50 + 1);  // BRA; EXIT once per warp
}

TEST(InstructionEstimate, ParsesAddr2line) {
  const char* text =
      "0x0000000000001233\n"
      "/out/kernels/emu_counters_build/../k.cu:20\n"
      " (inlined by) /out/kernels/k.cu:30\n"
      " (inlined by) /out/kernels/k.cu:40\n"
      "0x0000000000002000\n"
      "/out/kernels/k.cu:31 (discriminator 2)\n";
  const std::map<uint64_t, AccessLocation> locations = parse_addr2line(text);
  ASSERT_EQ(locations.size(), 2u);
  const AccessLocation& first = locations.at(0x1233);
  EXPECT_EQ(first.file, "k.cu");
  EXPECT_EQ(first.line, 20);
  EXPECT_EQ(first.caller_file, "k.cu");
  EXPECT_EQ(first.caller_line, 30);
  const AccessLocation& second = locations.at(0x2000);
  EXPECT_EQ(second.line, 31);
  EXPECT_EQ(second.caller_line, 0);
}

// Two loops: the vector loop the emulated run executed (line 50) and the scalar
// fallback it never entered (line 60), as a 128-bit path's kernel compiles.
constexpr const char* kFallbackListing = R"(	.target	sm_90

//--------------------- .text.v_kernel    --------------------------
	.section	.text.v_kernel,"ax",@progbits
v_kernel:
.text.v_kernel:
.L_x_0:
	//## File "/out/kernels/v.cu", line 50
        /*0000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0010*/                   FADD R4, R4, R5 ;
        /*0020*/               @P0 BRA `(.L_x_0) ;
.L_x_1:
	//## File "/out/kernels/v.cu", line 60
        /*0030*/                   LDG.E R6, desc[UR4][R2.64] ;
        /*0040*/                   FADD R6, R6, R6 ;
        /*0050*/               @P1 BRA `(.L_x_1) ;
        /*0060*/                   EXIT ;
)";

// nvdisasm -hex: each instruction's second encoding word on the line after it, its
// control bits in bits 41-63 (write scoreboard at 46-48, wait mask at 52-57).
constexpr const char* kHexListing = R"(	.target	sm_90

//--------------------- .text.h_kernel    --------------------------
h_kernel:
	//## File "/out/kernels/h.cu", line 10
        /*0000*/                   S2R R0, SR_TID.X ;                    /* 0x0000000000007919 */
                                                                         /* 0x000e220000002100 */
        /*0010*/                   IMAD.SHL.U32 R2, R0, 0x4, RZ ;        /* 0x0000000400027824 */
                                                                         /* 0x001fe200078e00ff */
.L_x_0:
	//## File "/out/kernels/h.cu", line 30
        /*0020*/                   LDG.E R4, desc[UR4][R2.64] ;          /* 0x0000000402047981 */
                                                                         /* 0x000ea20000000000 */
        /*0030*/                   LDG.E R5, desc[UR4][R2.64+0x80] ;     /* 0x0000800402057981 */
                                                                         /* 0x000ee20000000000 */
	//## File "/out/kernels/h.cu", line 31
        /*0040*/                   FFMA R6, R4, R4, R6 ;                 /* 0x0000000404067223 */
                                                                         /* 0x004fe20000000000 */
        /*0050*/                   FFMA R6, R5, R5, R6 ;                 /* 0x0000000505067223 */
                                                                         /* 0x008fe20000000000 */
	//## File "/out/kernels/h.cu", line 32
        /*0060*/                   LDS R7, [R2] ;                        /* 0x0000000002077984 */
                                                                         /* 0x000f220000000000 */
        /*0070*/                   FADD R6, R6, R7 ;                     /* 0x0000000706067221 */
                                                                         /* 0x010fe20000000000 */
        /*0080*/               @P0 BRA `(.L_x_0) ;                       /* 0xfffffffc00000947 */
                                                                         /* 0x000fe2000383ffff */
        /*0090*/                   EXIT ;                                /* 0x000000000000794d */
                                                                         /* 0x000fe20003800000 */
)";

TEST(InstructionEstimate, ControlBitsGiveLoadRounds) {
  Result<std::vector<SassKernel>> parsed = parse_sass(kHexListing);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
  ASSERT_EQ(parsed->size(), 1u);
  const std::vector<SassInstruction>& code = (*parsed)[0].instructions;
  ASSERT_EQ(code.size(), 10u);  // the encoding lines are not instructions
  EXPECT_TRUE(code[0].has_control);
  EXPECT_EQ(code[0].write_barrier, 0);  // S2R sets scoreboard 0
  EXPECT_EQ(code[1].wait_mask, 1);      // the IMAD waits on it
  EXPECT_EQ(code[2].write_barrier, 2);
  EXPECT_EQ(code[3].write_barrier, 3);
  EXPECT_EQ(code[4].wait_mask, 1 << 2);
  EXPECT_EQ(code[5].wait_mask, 1 << 3);
  EXPECT_EQ(code[8].write_barrier, -1);
  EXPECT_EQ(code[8].target, 0x20);
  // The loop's two loads run 40 times each (80 requests at line 30, 4 warps). In each
  // iteration the first FFMA waits on one of two load groups in flight (1/2 round),
  // the second on the last one (1 round); waiting on the S2R or the LDS costs none.
  std::map<AccessLocation, uint64_t> requests = {{{"h.cu", 30, "", 0, kStitchEmuGlobalLoad}, 80}};
  const InstructionCount count = count_instructions(*parsed, requests, 4);
  EXPECT_DOUBLE_EQ(count.estimate.global_loads, 80);
  EXPECT_DOUBLE_EQ(count.estimate.load_rounds, 1.5 * 40);
  // Without -hex nothing is known of the scoreboards: no rounds, no loads counted.
  Result<std::vector<SassKernel>> plain = parse_sass(kListing);
  ASSERT_TRUE(plain.is_ok());
  EXPECT_FALSE(plain->front().instructions.front().has_control);
  const InstructionCount none =
      count_instructions(*plain, {{{"k.cu", 30, "", 0, kStitchEmuGlobalLoad}, 40}}, 4);
  EXPECT_DOUBLE_EQ(none.estimate.load_rounds, 0);
  EXPECT_DOUBLE_EQ(none.estimate.global_loads, 0);
}

TEST(InstructionEstimate, LoopNeverEnteredWeighsNothing) {
  Result<std::vector<SassKernel>> parsed = parse_sass(kFallbackListing);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
  std::map<AccessLocation, uint64_t> requests = {
      {{"v.cu", 50, "", 0, kStitchEmuGlobalLoad}, 40},
  };
  const InstructionCount count = count_instructions(*parsed, requests, 4);
  EXPECT_EQ(count.anchors, 2);
  EXPECT_EQ(count.matched_anchors, 1);
  EXPECT_EQ(count.unexecuted_anchors, 1);
  EXPECT_DOUBLE_EQ(count.estimate.fp32, 40);  // the vector loop's FADD only
  EXPECT_DOUBLE_EQ(count.estimate.memory, 40);
  EXPECT_DOUBLE_EQ(count.estimate.control, 40 + 4);  // its BRA; EXIT once per warp
  // Without any matched anchor nothing says which loops ran: each runs once per warp.
  const InstructionCount unmatched = count_instructions(*parsed, {}, 4);
  EXPECT_EQ(unmatched.unexecuted_anchors, 0);
  EXPECT_DOUBLE_EQ(unmatched.estimate.total(), 7 * 4);
}

}  // namespace
}  // namespace stitch::profiling
