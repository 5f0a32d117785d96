#if defined(__clang__) && defined(__x86_64__)
#define LIFT_STREAM_STORE(p, v) __builtin_nontemporal_store((v), (p))
#else
#define LIFT_STREAM_STORE(p, v) (*(p) = (v))
#endif

typedef struct { float8 _0; float8 _1; } Tuple_float8_float8;

float8 mult(float x, float8 y) {
  return x * y;
}

float8 add(float8 x, float8 y) {
  return x + y;
}

// as_scalar << map_glb[vectors]((p) => add(mult(a, get(0) << p), get(1) << p)) << zip(as_vector(8) ...
kernel void lift_kernel(const global float* restrict a,
    const global float* restrict x,
    const global float* restrict y,
    global float* restrict out,
    int N) {
  {  // map_glb[vectors]((p) => add(mult(a, get(0) << p), get(1) << p)): one iteration per work-item
    int gl_vectors = get_global_id(0);
    LIFT_STREAM_STORE(&((global float8*)out)[gl_vectors], add(mult(a[0], ((global float8*)x)[gl_vectors]), ((global float8*)y)[gl_vectors]));  // add
  }
}
