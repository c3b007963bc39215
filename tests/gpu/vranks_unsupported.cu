// tests/gpu/vranks_unsupported.cu - each case uses one API the virtual-rank
// emulation does not support, and must FAIL to compile with -DCUCO_VRANKS,
// naming the API (checked by tests/cli/t0701-vranks-compile.sh).
//   -DVR_CASE=0   only supported calls: must compile
//   -DVR_CASE=N   case N alone (1..8)
//   -DVR_CASE=99  every refused case at once, each in a function of its own
//                 (one front-end parse instead of eight: the emulation's
//                 static_asserts fire per instantiation, and the compiler
//                 names the line of each, so the test maps every error to
//                 its case by the "VR_CASE N" marker on that line)
#include "cuco_nccl.cuh"

#ifndef VR_CASE
#define VR_CASE 0
#endif
#define VR_ON(n) (VR_CASE == (n) || VR_CASE == 99)

#if VR_CASE == 0
__global__ void vr_case0(ncclDevComm dc, ncclWindow_t w) {
  ncclBarrierSession<ncclCoopCta> bar(ncclCoopCta(), ncclTeamTagLsa(), dc, blockIdx.x);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel, ncclGinFenceLevel::Relaxed);
  ncclSymPtr<int> p(w, 0);
  *p.peerPtr(ncclTeamWorld(dc), dc.rank) = dc.ginContextCount;
  *(int *)ncclGetResourceBufferLsaPointer(dc, 0, dc.lsaRank) = ncclTeamRail(dc).nRanks;
}
#endif

#if VR_ON(1)
__global__ void vr_case1(ncclDevComm dc) {
  ncclGin gin(dc, 0); // VR_CASE 1: GIN
}
#endif
#if VR_ON(2)
__global__ void vr_case2(ncclDevComm dc, ncclWindow_t w) {
  *(int *)ncclGetLsaMultimemPointer(w, 0, dc) = 1; // VR_CASE 2: multimem
}
#endif
#if VR_ON(3)
__global__ void vr_case3(ncclDevComm dc) {
  ncclLLA2AHandle h{};
  ncclLLA2ASession<ncclCoopCta> ll(ncclCoopCta(), dc, ncclTeamLsa(dc), h, blockIdx.x, 1); // VR_CASE 3: LL all-to-all
}
#endif
#if VR_ON(4)
__global__ void vr_case4(ncclDevComm dc) {
  ncclBarrierSession<ncclCoopCta> bar(ncclCoopCta(), ncclTeamTagRail(), dc, blockIdx.x); // VR_CASE 4: rail = GIN
}
#endif
#if VR_ON(5)
__global__ void vr_case5(ncclDevComm dc, ncclWindow_t w) {
  ncclSymPtr<int> p(w, 0);
  *p.multimemPtr(dc.lsaMultimem) = 1; // VR_CASE 5: multimem through ncclSymPtr
}
#endif
#if VR_ON(6)
int vr_case6(void) {
  ncclLLA2AHandle h;
  ncclDevResourceRequirements r;
  return (int)ncclLLA2ACreateRequirement(4, 4, &h, &r); // VR_CASE 6: host LL requirement
}
#endif
#if VR_ON(7)
int vr_case7(ncclComm_t c) { return ncclTeamLsa(c).nRanks; } // VR_CASE 7: host team needs a real comm
#endif
#if VR_ON(8)
int vr_case8(ncclDevCommRequirements *r, ncclDevComm *d) {
  return (int)ncclDevCommCreate(nullptr, r, d); // VR_CASE 8: the runtime creates comms
}
#endif
