"""Hopper (sm_90a) primitives: thin, typed wrappers that emit nvgpu/nvvm ops inside kernels."""
