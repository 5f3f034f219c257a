/* The module of remote/il_programs (test_il_programs.c), compiled to SPIR-V
   at build time (il_tests.cmake): out[i] = in[i] * factor + 0x9e3779b9,
   factor the specialization constant of SpecId 5 (default 3), which
   llvm-spirv makes of a call to __spirv_SpecConstant.  */
int __attribute__ ((overloadable)) __spirv_SpecConstant (int id, int def);

kernel void
scale (global const uint *in, global uint *out)
{
  size_t i = get_global_id (0);
  uint factor = (uint)__spirv_SpecConstant (5, 3);
  out[i] = in[i] * factor + 0x9e3779b9u;
}
