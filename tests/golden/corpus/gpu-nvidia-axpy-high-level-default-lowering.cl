typedef struct { float _0; float _1; } Tuple_float_float;

float axpy(float a, float x, float y) {
  return a * x + y;
}

// map_glb((p) => axpy(a, get(0) << p, get(1) << p)) << zip(x, y)
kernel void lift_kernel(const global float* restrict a,
    const global float* restrict x,
    const global float* restrict y,
    global float* restrict out,
    int N) {
  {  // map_glb((p) => axpy(a, get(0) << p, get(1) << p)): one iteration per work-item
    int gl = get_global_id(0);
    out[gl] = axpy(a[0], x[gl], y[gl]);  // axpy
  }
}
