// Experiment M's fold against main's merge_key_groups, bit for bit (written by a review helper in the fifty-fourth
// session; not run: no device time was left). Build against MAIN's tree (its merge.cuh is the old fold):
//   git show main:src/backends/cuda/decode/merge.cuh > /tmp/old/backends/cuda/decode/merge.cuh (or a checkout of main), then
//   nvcc -O3 -arch=sm_90 -std=c++17 --expt-relaxed-constexpr -I<main>/src -I<main>/include this.cu -o m && ./m
// Random states with -inf rows, maxes of +-1e30 and rows no group saw; D 64/128/256, MT 1/2; prints the bits that differ.
#include <cstdio>
#include "backends/cuda/decode/merge.cuh"
#define F(j,n) for(int j=0;j<n;++j)
using namespace flashcore::cuda::detail;
template<int D,int MT>__global__ void k(unsigned*bad,float sl){
constexpr int KG=4/MT,V=D/2+4,S=D/8/KG;extern __shared__ float xb[];
int l=threadIdx.x&31,w=threadIdx.x>>5,mt=w%MT,kg=w/MT;unsigned h=(blockIdx.x*128+threadIdx.x)*2654435761u+1;
auto R=[&]{h^=h<<13;h^=h>>17;h^=h<<5;return (int)(h&0xffff)/32768.f-1;};
float o[D/8][4],rm[2],rs[2],p[D/8][4],pm[2],ps[2];
F(q,2){int md=(int)(4*R()+4);if(blockIdx.x%7==0&&q==0)md=0;rm[q]=md==0?-INFINITY:md==1?1e30f*R():30*R();rs[q]=md==0?0:1+15*fabsf(R());F(j,D/8)F(e,2)o[j][2*q+e]=md==0?0:4*R();}
F(j,D/8)F(e,4)p[j][e]=o[j][e];F(q,2)pm[q]=rm[q],ps[q]=rs[q];
merge_key_groups<D,MT,KG>(xb,mt,kg,l,sl,o,rm,rs);__syncthreads();
{float*d=xb+(kg*MT+mt)*V*32+l;F(j,D/8)F(e,4)d[(j*4+e)*32]=p[j][e];F(q,2){d[(V-4+q)*32]=pm[q];d[(V-2+q)*32]=ps[q];}__syncthreads();
auto g=[&](int k){return xb+(k*MT+mt)*V*32+l;};float mx[2]={g(0)[(V-4)*32],g(0)[(V-3)*32]};
#pragma unroll
for(int k=1;k<KG;++k)F(q,2)mx[q]=fmaxf(mx[q],g(k)[(V-4+q)*32]);
auto fa=[&](float m,int r){return m==-INFINITY?0.f:fast_exp2((m-mx[r])*sl);};
#pragma unroll
for(int k=0;k<KG;++k){const float*c=g(k);const float f[2]={fa(c[(V-4)*32],0),fa(c[(V-3)*32],1)};
if(k==0){F(q,2)ps[q]=c[(V-2+q)*32]*f[q];}else{F(q,2)ps[q]=fmaf(f[q],c[(V-2+q)*32],ps[q]);}
#pragma unroll
F(j,D/8){if(j/S!=kg)continue;
#pragma unroll
F(e,4){float x=c[(j*4+e)*32];p[j][e]=k==0?x*f[e>>1]:fmaf(f[e>>1],x,p[j][e]);}}}pm[0]=mx[0];pm[1]=mx[1];}
__syncthreads();float*d=xb+(mt*32+l)*V;if(kg==0){F(j,D/8)F(e,4)d[j*4+e]=o[j][e];F(q,2)d[D/2+q]=rm[q],d[D/2+2+q]=rs[q];}__syncthreads();
unsigned n=0;F(j,D/8)if(j/S==kg)F(e,4)n+=__float_as_uint(p[j][e])!=__float_as_uint(d[j*4+e]);
F(q,2)n+=(__float_as_uint(pm[q])!=__float_as_uint(d[D/2+q]))+(__float_as_uint(ps[q])!=__float_as_uint(d[D/2+2+q]));
atomicAdd(bad,n);if(d[D/2]==-INFINITY)atomicAdd(bad+1,1);}
template<int D,int MT>int run(unsigned*b){int sm=128*(D/2+4)*4;cudaFuncSetAttribute(k<D,MT>,cudaFuncAttributeMaxDynamicSharedMemorySize,sm);
b[0]=b[1]=0;k<D,MT><<<3000,128,sm>>>(b,1.44269504f/sqrtf(D));int e=cudaDeviceSynchronize();printf("D=%d MT=%d: err %d, %u bits differ (lanes with -inf max: %u)\n",D,MT,e,b[0],b[1]);return e||b[0];}
int main(){unsigned*b;cudaMallocManaged(&b,8);int r=run<64,1>(b)|run<64,2>(b)|run<128,1>(b)|run<128,2>(b)|run<256,1>(b)|run<256,2>(b);puts(r?"FAIL":"ALL BITWISE EQUAL");}
