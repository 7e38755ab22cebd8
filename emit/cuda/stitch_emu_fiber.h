// stitch_emu_fiber.h: the fiber switch of the CUDA emulation (stitch_emu.cc, fiber
// mode). Included by stitch_emu.cc only.
//
// A CUDA thread parks at every barrier and warp collective, so an emulated kernel
// switches fibers once per thread per barrier. glibc's swapcontext saves and restores
// the signal mask with a system call at every switch: in `stitchopt run --emulate`
// of the bundled bert that was 65% of the run (swapcontext and its rt_sigprocmask).
// On x86-64 the switch below is a plain function that saves the callee-saved
// registers, the SSE control word and the x87 control word on the old stack and
// loads them from the new one (the System V ABI's preserved state; the signal mask
// is never changed by an emulated kernel, so it need not travel with a fiber).
//
// Elsewhere, and where the switch would hide fibers from a tool that tracks stacks
// (AddressSanitizer, ThreadSanitizer) or from the CPU's shadow stack (CET's
// -fcf-protection, whose return checks a hand-made frame would fail), it is
// makecontext/swapcontext as before.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define STITCH_EMU_FIBER_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STITCH_EMU_FIBER_SANITIZED 1
#endif

#if defined(__x86_64__) && defined(__linux__) && !defined(__CET__) && \
    !defined(STITCH_EMU_FIBER_SANITIZED) && !defined(STITCH_EMU_UCONTEXT)
#define STITCH_EMU_FAST_SWITCH 1
#else
#include <ucontext.h>
#endif

namespace stitch_emu::fiber {

#if defined(STITCH_EMU_FAST_SWITCH)

// A suspended fiber: its stack pointer, where the switch left its saved registers.
struct Context {
  void* sp = nullptr;
};

extern "C" {
// Saves the running fiber's state on its stack, stores that stack pointer in *from and
// resumes the fiber whose stack pointer is `to`. Returns when something switches back.
void stitch_emu_fiber_switch(void** from, void* to);
// The first frame of a fresh fiber: calls the entry in %rbx (never returns).
void stitch_emu_fiber_start();
}

// The x86-64 switch: the six callee-saved registers pushed, then MXCSR and the x87
// control word in one 8-byte slot; the stack pointer changes hands; the same pops in
// reverse, and `ret` resumes the other fiber where it called the switch.
asm(R"(
    .text
    .p2align 4
    .globl stitch_emu_fiber_switch
    .hidden stitch_emu_fiber_switch
    .type stitch_emu_fiber_switch, @function
stitch_emu_fiber_switch:
    .cfi_startproc
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .cfi_endproc
    .size stitch_emu_fiber_switch, .-stitch_emu_fiber_switch

    .p2align 4
    .globl stitch_emu_fiber_start
    .hidden stitch_emu_fiber_start
    .type stitch_emu_fiber_start, @function
stitch_emu_fiber_start:
    .cfi_startproc
    .cfi_undefined rip
    xorl %ebp, %ebp
    callq *%rbx
    ud2
    .cfi_endproc
    .size stitch_emu_fiber_start, .-stitch_emu_fiber_start
)");

// Lays out a frame on [stack, stack + bytes) that the switch resumes into
// stitch_emu_fiber_start, which calls entry() with the stack 16-byte aligned as a call
// requires. The control words are the caller's.
inline void prepare(Context& context, void* stack, size_t bytes, void (*entry)()) {
  auto top = reinterpret_cast<uintptr_t>(stack) + bytes;
  top &= ~uintptr_t{15};
  // Above the return address: 16 bytes that nothing uses, so that the start frame's
  // stack pointer is 16-byte aligned at its call.
  auto* frame = reinterpret_cast<uint64_t*>(top - 16);
  *--frame = reinterpret_cast<uint64_t>(&stitch_emu_fiber_start);  // ret target
  *--frame = 0;                                                    // rbp
  *--frame = reinterpret_cast<uint64_t>(entry);                    // rbx
  for (int i = 0; i < 4; ++i) *--frame = 0;                        // r12-r15
  uint32_t mxcsr = 0;
  uint16_t x87 = 0;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(x87));
  *--frame = uint64_t{mxcsr} | (uint64_t{x87} << 32);
  context.sp = frame;
}

inline void switch_to(Context& from, Context& to) { stitch_emu_fiber_switch(&from.sp, to.sp); }

// Leaves a fiber that will never run again (its stack is reused by a later one).
[[noreturn]] inline void jump_to(Context& to) {
  void* discarded = nullptr;
  stitch_emu_fiber_switch(&discarded, to.sp);
  __builtin_unreachable();
}

#else

struct Context {
  ucontext_t context;
};

// getcontext() once per OS thread, copied into every fresh fiber (saves a system call
// per fiber).
inline thread_local ucontext_t t_template;
inline thread_local bool t_template_ready = false;

[[gnu::noinline]] inline void capture_template() {
  if (t_template_ready) return;
  getcontext(&t_template);
  t_template_ready = true;
}

inline void prepare(Context& context, void* stack, size_t bytes, void (*entry)()) {
  capture_template();
  context.context = t_template;
  context.context.uc_stack.ss_sp = stack;
  context.context.uc_stack.ss_size = bytes;
  context.context.uc_link = nullptr;
  makecontext(&context.context, entry, 0);
}

inline void switch_to(Context& from, Context& to) { swapcontext(&from.context, &to.context); }

[[noreturn]] inline void jump_to(Context& to) {
  setcontext(&to.context);
  __builtin_unreachable();
}

#endif

}  // namespace stitch_emu::fiber
