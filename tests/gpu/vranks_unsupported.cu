// tests/gpu/vranks_unsupported.cu - each VR_CASE uses one API the virtual-rank
// emulation does not support; every case must FAIL to compile with
// -DCUCO_VRANKS, naming the API (checked by tests/cli/t0701-vranks-compile.sh).
// VR_CASE=0 uses only supported calls and must compile.
#include "cuco_nccl.cuh"

#ifndef VR_CASE
#define VR_CASE 0
#endif

__global__ void vr_case(ncclDevComm dc, ncclWindow_t w) {
#if VR_CASE == 0
  ncclBarrierSession<ncclCoopCta> bar(ncclCoopCta(), ncclTeamTagLsa(), dc, blockIdx.x);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel, ncclGinFenceLevel::Relaxed);
  ncclSymPtr<int> p(w, 0);
  *p.peerPtr(ncclTeamWorld(dc), dc.rank) = dc.ginContextCount;
  *(int *)ncclGetResourceBufferLsaPointer(dc, 0, dc.lsaRank) = ncclTeamRail(dc).nRanks;
#elif VR_CASE == 1
  ncclGin gin(dc, 0);                                   // GIN
#elif VR_CASE == 2
  *(int *)ncclGetLsaMultimemPointer(w, 0, dc) = 1;      // multimem
#elif VR_CASE == 3
  ncclLLA2AHandle h{};                                  // LL all-to-all
  ncclLLA2ASession<ncclCoopCta> ll(ncclCoopCta(), dc, ncclTeamLsa(dc), h, blockIdx.x, 1);
#elif VR_CASE == 4
  ncclBarrierSession<ncclCoopCta> bar(ncclCoopCta(), ncclTeamTagRail(), dc, blockIdx.x);  // rail = GIN
#elif VR_CASE == 5
  ncclSymPtr<int> p(w, 0);
  *p.multimemPtr(dc.lsaMultimem) = 1;                    // multimem through ncclSymPtr
#endif
}

#if VR_CASE == 7
int vr_host_team(ncclComm_t c) { return ncclTeamLsa(c).nRanks; } // host team needs a real comm
#endif

#if VR_CASE == 6
int vr_host_case(void) {
  ncclLLA2AHandle h;
  ncclDevResourceRequirements r;
  return (int)ncclLLA2ACreateRequirement(4, 4, &h, &r); // host LL requirement
}
#endif
