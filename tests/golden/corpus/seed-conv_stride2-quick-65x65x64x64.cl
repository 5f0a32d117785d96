#if defined(__clang__) && defined(__x86_64__)
#define LIFT_STREAM_STORE(p, v) __builtin_nontemporal_store((v), (p))
#else
#define LIFT_STREAM_STORE(p, v) (*(p) = (v))
#endif

typedef struct { float8 _0; float8 _1; } Tuple_float8_float8;

float8 id_v8(float8 x) {
  return x;
}

float8 bcast8_float(float a) {
  return (float8)(a);
}

float8 add_mult_v8(float8 x, float8 mult_a, float8 mult_b) {
  return x + (mult_a * mult_b);
}

// (pb) => transpose_w << map_glb((row) => split(16) << as_scalar << map_glb(to_global(vectorise(id,...
kernel void lift_kernel(const global float* restrict wts,
    global float* restrict tmp) {
  {  // map_glb((row) => split(16) << as_scalar << map_glb(to_global(vector...: one iteration per work-item
    int gl = get_global_id(1);
    {  // map_glb(to_global(vectorise(id, 8))): one iteration per work-item
      int gl_1 = get_global_id(0);
      ((global float8*)tmp)[2*gl + gl_1 + 1150*(gl_1 / 2)] = id_v8((float8)(wts[gl + 4608*gl_1], wts[gl + 4608*gl_1 + 576], wts[gl + 4608*gl_1 + 1152], wts[gl + 4608*gl_1 + 1728], wts[gl + 4608*gl_1 + 2304], wts[gl + 4608*gl_1 + 2880], wts[gl + 4608*gl_1 + 3456], wts[gl + 4608*gl_1 + 4032]));  // vectorise(id, 8)
    }
  }
}

// (ta, tx) => join << map_glb((as) => map(join) << transpose << map_glb((xs) => map(as_scalar) << t...
kernel void lift_main(const global float* restrict inp,
    global float* restrict out,
    global float* restrict tmp) {
  {  // map_glb((as) => map(join) << transpose << map_glb((xs) => map(as_sc...: one iteration per work-item
    int gl_2 = get_global_id(1);
    {  // map_glb((xs) => map(as_scalar) << to_global(map_seq(map_seq(vectori...: one iteration per work-item
      int gl_3 = get_global_id(0);
      float8 acc[8];  // acc for [[<Float>8]2]4
      #pragma unroll
      for (int c = 0; c < 4; c++) {  // copy (initial value)
        #pragma unroll
        for (int c_1 = 0; c_1 < 2; c_1++) {  // copy (initial value)
          acc[2*c + c_1] = (float8)(0.0f);  // initial value
        }
      }
      #pragma unroll
      for (int i = 0; i < 3; i++) {  // reduce_seq(reduce_seq((acc, ab) => map_seq((ra) => map_seq((c) => v...
        float8 acc_1[8];  // acc for [[<Float>8]2]4
        #pragma unroll
        for (int c_2 = 0; c_2 < 4; c_2++) {  // copy (initial value)
          #pragma unroll
          for (int c_3 = 0; c_3 < 2; c_3++) {  // copy (initial value)
            acc_1[2*c_2 + c_3] = acc[2*c_2 + c_3];  // initial value
          }
        }
        for (int i_1 = 0; i_1 < 192; i_1++) {  // reduce_seq((acc, ab) => map_seq((ra) => map_seq((c) => vectorise(ad...
          #pragma unroll
          for (int i_2 = 0; i_2 < 4; i_2++) {  // map_seq((ra) => map_seq((c) => vectorise(add_mult, 8)(get(0) << c, ...
            #pragma unroll
            for (int i_3 = 0; i_3 < 2; i_3++) {  // map_seq((c) => vectorise(add_mult, 8)(get(0) << c, bcast8_float << ...
              acc_1[2*i_2 + i_3] = add_mult_v8(acc_1[2*i_2 + i_3], bcast8_float(inp[512*gl_2 + 4160*i + i_1 + 128*i_2 + 4224*((4*gl_2 + i_2) / 32)]), ((global float8*)tmp)[1152*gl_3 + 384*i + 2*i_1 + i_3]);  // vectorise(add_mult, 8)
            }
          }
        }
        #pragma unroll
        for (int c_4 = 0; c_4 < 4; c_4++) {  // copy (reduction result)
          #pragma unroll
          for (int c_5 = 0; c_5 < 2; c_5++) {  // copy (reduction result)
            acc[2*c_4 + c_5] = acc_1[2*c_4 + c_5];  // reduction result
          }
        }
      }
      #pragma unroll
      for (int i_4 = 0; i_4 < 4; i_4++) {  // map_seq(map_seq(vectorise(id, 8)))
        #pragma unroll
        for (int i_5 = 0; i_5 < 2; i_5++) {  // map_seq(vectorise(id, 8))
          LIFT_STREAM_STORE(&((global float8*)out)[32*gl_2 + 2*gl_3 + 8*i_4 + i_5], id_v8(acc[2*i_4 + i_5]));  // vectorise(id, 8)
        }
      }
    }
  }
}
