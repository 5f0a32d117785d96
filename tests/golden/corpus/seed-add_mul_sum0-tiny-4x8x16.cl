#if defined(__clang__) && defined(__x86_64__)
#define LIFT_STREAM_STORE(p, v) __builtin_nontemporal_store((v), (p))
#else
#define LIFT_STREAM_STORE(p, v) (*(p) = (v))
#endif

typedef struct { float16 _0; float16 _1; float16 _2; float16 _3; } Tuple_float16_float16_float16_float16;

float16 add_mul_v16(float16 x, float16 a, float16 b) {
  return (x + a) * b;
}

float16 add_v16(float16 x, float16 y) {
  return x + y;
}

float16 id_v16(float16 x) {
  return x;
}

// split(16) << as_scalar << join << map_glb((cs) => to_global(map_seq(vectorise(id, 16))) << reduce...
kernel void lift_kernel(const global float* restrict x,
    const global float* restrict a,
    const global float* restrict bb,
    global float* restrict out) {
  {  // map_glb((cs) => to_global(map_seq(vectorise(id, 16))) << reduce_seq...: one iteration per work-item
    int gl = get_global_id(0);
    float16 acc[8];  // acc for [<Float>16]8
    #pragma unroll
    for (int c = 0; c < 8; c++) {  // copy (initial value)
      acc[c] = (float16)(0.0f);  // initial value
    }
    #pragma unroll
    for (int i = 0; i < 4; i++) {  // reduce_seq((acc, e) => map_seq((pq) => vectorise(add, 16)(get(0) <<...
      #pragma unroll
      for (int i_1 = 0; i_1 < 8; i_1++) {  // map_seq((pq) => vectorise(add, 16)(get(0) << pq, vectorise(add_mul,...
        acc[i_1] = add_v16(acc[i_1], add_mul_v16(((global float16*)x)[8*gl + 8*i + i_1], ((global float16*)a)[8*gl + i_1], ((global float16*)bb)[8*gl + i_1]));  // vectorise(add, 16)
      }
    }
    #pragma unroll
    for (int i_2 = 0; i_2 < 8; i_2++) {  // map_seq(vectorise(id, 16))
      LIFT_STREAM_STORE(&((global float16*)out)[8*gl + i_2], id_v16(acc[i_2]));  // vectorise(id, 16)
    }
  }
}
