"""Runtime layer: the CUDA driver through cuda-python. Never traces or compiles."""
