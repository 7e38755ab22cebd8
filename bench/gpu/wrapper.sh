# Sourced by bench/gpu/device_run.sh and ncu_kernels.sh on the GPU machine, with STAGE
# set: BIN becomes a wrapper around the carried stitchopt that alone sees the carried
# libraries and CUDA's (the toolkit's, then the wheels'), so that python3 and nvcc keep
# their own; LIBS is that library path.
LIBS=$PWD/$STAGE/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib
for dir in $(python3 -c "import glob, nvidia; print(' '.join(sorted({d for p in nvidia.__path__ for d in glob.glob(p + '/*/lib')})))" 2>/dev/null); do
  LIBS=$LIBS:$dir
done
BIN=/tmp/stitchopt-wrapper
cat >"$BIN" <<WRAPPER
#!/bin/bash
export LD_LIBRARY_PATH=$LIBS\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export STITCH_RUNTIME_CUDA=$PWD/$STAGE/lib/libstitch_runtime_cuda.so
exec $PWD/$STAGE/bin/stitchopt "\$@"
WRAPPER
chmod +x "$BIN"
