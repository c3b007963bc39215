/* Unit tests of the speed-of-light bound (runtime/rt_sol.h) and of every
 * workload's declared minimal work (workloads/X/wl_work.h, frozen): for
 * every size of every workload.ini, at 1, 2, 4 and 8 ranks, the declared
 * flops / HBM bytes / link bytes equal the values computed by hand (an
 * independent script, tests/unit/sol_wants.py, printed the table below;
 * see docs/contracts.md 4e for the rules).  A size added to a workload.ini
 * without a row here fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_sol.h"
#include "workload.h"
#include "../../workloads/flash_attn_cp/wl_work.h"
#include "../../workloads/gemm_allgather/wl_work.h"
#include "../../workloads/kv_transfer/wl_work.h"
#include "../../workloads/moe_dsv3/wl_work.h"

/* The runtime's wl_param (rt_ctx.cu), for the headers. */
long long wl_param(const struct wl_problem *p, const char *name, long long def)
{
  int i;

  for (i = 0; p && i < p->nparams; i++)
    if (!strcmp(p->params[i].name, name))
      return p->params[i].value;
  return def;
}

struct want {
  const char *wl, *size;
  int R, rank;
  double flops, hbm, link;
};

static const struct want wants[] = {
    {"gemm_allgather", "small_a", 1, 0, 100663296.0, 851968.0, 0},
    {"gemm_allgather", "small_a", 2, 0, 50331648.0, 425984.0, 131072.0},
    {"gemm_allgather", "small_a", 2, 1, 50331648.0, 425984.0, 131072.0},
    {"gemm_allgather", "small_a", 4, 1, 25165824.0, 212992.0, 196608.0},
    {"gemm_allgather", "small_a", 8, 7, 12582912.0, 106496.0, 229376.0},
    {"gemm_allgather", "small_b", 1, 0, 6528000.0, 135040.0, 0},
    {"gemm_allgather", "small_b", 2, 0, 3264000.0, 67520.0, 27200.0},
    {"gemm_allgather", "small_b", 2, 1, 3264000.0, 67520.0, 27200.0},
    {"gemm_allgather", "small_b", 4, 1, 1632000.0, 33760.0, 40800.0},
    {"gemm_allgather", "small_b", 8, 7, 816000.0, 16880.0, 47600.0},
    {"gemm_allgather", "small_c", 1, 0, 138240.0, 11136.0, 0},
    {"gemm_allgather", "small_c", 2, 0, 69120.0, 5568.0, 2880.0},
    {"gemm_allgather", "small_c", 2, 1, 69120.0, 5568.0, 2880.0},
    {"gemm_allgather", "small_c", 4, 1, 34560.0, 2784.0, 4320.0},
    {"gemm_allgather", "small_c", 8, 7, 17280.0, 1392.0, 5040.0},
    {"gemm_allgather", "mid_a", 1, 0, 2163072000.0, 6323072.0, 0},
    {"gemm_allgather", "mid_a", 2, 0, 1081536000.0, 3161536.0, 1032000.0},
    {"gemm_allgather", "mid_a", 2, 1, 1081536000.0, 3161536.0, 1032000.0},
    {"gemm_allgather", "mid_a", 4, 1, 540768000.0, 1580768.0, 1548000.0},
    {"gemm_allgather", "mid_a", 8, 7, 270384000.0, 790384.0, 1806000.0},
    {"gemm_allgather", "full_4k", 1, 0, 1924145348608.0, 771751936.0, 0},
    {"gemm_allgather", "full_4k", 2, 0, 962072674304.0, 385875968.0,
     33554432.0},
    {"gemm_allgather", "full_4k", 2, 1, 962072674304.0, 385875968.0,
     33554432.0},
    {"gemm_allgather", "full_4k", 4, 1, 481036337152.0, 192937984.0,
     50331648.0},
    {"gemm_allgather", "full_4k", 8, 7, 240518168576.0, 96468992.0,
     58720256.0},
    {"gemm_allgather", "full_8k", 1, 0, 3848290697216.0, 1073741824.0, 0},
    {"gemm_allgather", "full_8k", 2, 0, 1924145348608.0, 536870912.0,
     67108864.0},
    {"gemm_allgather", "full_8k", 2, 1, 1924145348608.0, 536870912.0,
     67108864.0},
    {"gemm_allgather", "full_8k", 4, 1, 962072674304.0, 268435456.0,
     100663296.0},
    {"gemm_allgather", "full_8k", 8, 7, 481036337152.0, 134217728.0,
     117440512.0},
    {"gemm_allgather", "full_16k", 1, 0, 7696581394432.0, 1677721600.0, 0},
    {"gemm_allgather", "full_16k", 2, 0, 3848290697216.0, 838860800.0,
     134217728.0},
    {"gemm_allgather", "full_16k", 2, 1, 3848290697216.0, 838860800.0,
     134217728.0},
    {"gemm_allgather", "full_16k", 4, 1, 1924145348608.0, 419430400.0,
     201326592.0},
    {"gemm_allgather", "full_16k", 8, 7, 962072674304.0, 209715200.0,
     234881024.0},
    {"flash_attn_cp", "v_tiny", 1, 0, 1204224.0, 62208, 0},
    {"flash_attn_cp", "v_tiny", 2, 0, 602112.0, 31104, 6144},
    {"flash_attn_cp", "v_tiny", 2, 1, 602112.0, 31104, 3072},
    {"flash_attn_cp", "v_tiny", 4, 1, 301056.0, 15552, 6144},
    {"flash_attn_cp", "v_tiny", 8, 7, 150528.0, 7776, 3072},
    {"flash_attn_cp", "v_small", 1, 0, 134742016.0, 1318912, 0},
    {"flash_attn_cp", "v_small", 2, 0, 67371008.0, 659456, 131072},
    {"flash_attn_cp", "v_small", 2, 1, 67371008.0, 659456, 65536},
    {"flash_attn_cp", "v_small", 4, 1, 33685504.0, 329728, 131072},
    {"flash_attn_cp", "v_small", 8, 7, 16842752.0, 164864, 65536},
    {"flash_attn_cp", "v_odd", 1, 0, 2054148096.0, 8256000, 0},
    {"flash_attn_cp", "v_odd", 2, 0, 1027074048.0, 4128000, 1024000},
    {"flash_attn_cp", "v_odd", 2, 1, 1027074048.0, 4128000, 1024000},
    {"flash_attn_cp", "v_odd", 4, 1, 513537024.0, 2064000, 512000},
    {"flash_attn_cp", "v_odd", 8, 7, 256768512.0, 1023744, 253952},
    {"flash_attn_cp", "v_1000", 1, 0, 8200192000.0, 20608000, 0},
    {"flash_attn_cp", "v_1000", 2, 0, 4100096000.0, 10304000, 2048000},
    {"flash_attn_cp", "v_1000", 2, 1, 4100096000.0, 10304000, 1024000},
    {"flash_attn_cp", "v_1000", 4, 1, 2050048000.0, 5152000, 2048000},
    {"flash_attn_cp", "v_1000", 8, 7, 1025024000.0, 2555392, 1015808},
    {"flash_attn_cp", "v_contig", 1, 0, 268959744.0, 1318912, 0},
    {"flash_attn_cp", "v_contig", 2, 0, 134479872.0, 659456, 0},
    {"flash_attn_cp", "v_contig", 2, 1, 134479872.0, 659456, 131072},
    {"flash_attn_cp", "v_contig", 4, 1, 67239936.0, 329728, 65536},
    {"flash_attn_cp", "v_contig", 8, 7, 33619968.0, 164864, 65536},
    {"flash_attn_cp", "v_gqa", 1, 0, 34376515584.0, 42205184, 0},
    {"flash_attn_cp", "v_gqa", 2, 0, 17188257792.0, 21102592, 4194304},
    {"flash_attn_cp", "v_gqa", 2, 1, 17188257792.0, 21102592, 2097152},
    {"flash_attn_cp", "v_gqa", 4, 1, 8594128896.0, 10551296, 4194304},
    {"flash_attn_cp", "v_gqa", 8, 7, 4297064448.0, 5275648, 2097152},
    {"flash_attn_cp", "short", 1, 0, 8598323200.0, 21102592, 0},
    {"flash_attn_cp", "short", 2, 0, 17188257792.0, 21102592, 4194304},
    {"flash_attn_cp", "short", 2, 1, 17188257792.0, 21102592, 2097152},
    {"flash_attn_cp", "short", 4, 1, 34368126976.0, 21102592, 8388608},
    {"flash_attn_cp", "short", 8, 7, 68727865344.0, 21102592, 8388608},
    {"flash_attn_cp", "mid", 1, 0, 549822922752.0, 168820736, 0},
    {"flash_attn_cp", "mid", 2, 0, 1099578736640.0, 168820736, 33554432},
    {"flash_attn_cp", "mid", 2, 1, 1099578736640.0, 168820736, 16777216},
    {"flash_attn_cp", "mid", 4, 1, 2199090364416.0, 168820736, 67108864},
    {"flash_attn_cp", "mid", 8, 7, 4398113619968.0, 168820736, 67108864},
    {"flash_attn_cp", "mha", 1, 0, 549822922752.0, 269484032, 0},
    {"flash_attn_cp", "mha", 2, 0, 1099578736640.0, 269484032, 67108864},
    {"flash_attn_cp", "mha", 2, 1, 1099578736640.0, 269484032, 67108864},
    {"flash_attn_cp", "mha", 4, 1, 2199090364416.0, 269484032, 67108864},
    {"flash_attn_cp", "mha", 8, 7, 4398113619968.0, 269484032, 67108864},
    {"flash_attn_cp", "long", 1, 0, 140738562097152.0, 2701131776, 0},
    {"flash_attn_cp", "long", 2, 0, 70369281048576.0, 1350565888, 268435456},
    {"flash_attn_cp", "long", 2, 1, 70369281048576.0, 1350565888, 134217728},
    {"flash_attn_cp", "long", 4, 1, 35184640524288.0, 675282944, 268435456},
    {"flash_attn_cp", "long", 8, 7, 17592320262144.0, 337641472, 134217728},
    {"flash_attn_cp", "mid_contig", 1, 0, 549822922752.0, 168820736, 0},
    {"flash_attn_cp", "mid_contig", 2, 0, 1099578736640.0, 168820736, 0},
    {"flash_attn_cp", "mid_contig", 2, 1, 1099578736640.0, 168820736,
     33554432},
    {"flash_attn_cp", "mid_contig", 4, 1, 2199090364416.0, 168820736,
     33554432},
    {"flash_attn_cp", "mid_contig", 8, 7, 4398113619968.0, 168820736,
     67108864},
    {"flash_attn_cp", "paper_4k", 1, 0, 68736253952.0, 42467328, 0},
    {"flash_attn_cp", "paper_4k", 2, 0, 34368126976.0, 21233664, 4194304},
    {"flash_attn_cp", "paper_4k", 2, 1, 34368126976.0, 21233664, 2097152},
    {"flash_attn_cp", "paper_4k", 4, 1, 17184063488.0, 10616832, 4194304},
    {"flash_attn_cp", "paper_4k", 8, 7, 8592031744.0, 5308416, 2097152},
    {"flash_attn_cp", "paper_8k", 1, 0, 274911461376.0, 84934656, 0},
    {"flash_attn_cp", "paper_8k", 2, 0, 137455730688.0, 42467328, 8388608},
    {"flash_attn_cp", "paper_8k", 2, 1, 137455730688.0, 42467328, 4194304},
    {"flash_attn_cp", "paper_8k", 4, 1, 68727865344.0, 21233664, 8388608},
    {"flash_attn_cp", "paper_8k", 8, 7, 34363932672.0, 10616832, 4194304},
    {"kv_transfer", "v_tiny", 1, 0, 2097152, 73728, 0},
    {"kv_transfer", "v_tiny", 2, 0, 2097152, 40960, 32768},
    {"kv_transfer", "v_tiny", 2, 1, 0, 32768, 32768},
    {"kv_transfer", "v_tiny", 4, 1, 2097152, 40960, 32768},
    {"kv_transfer", "v_tiny", 8, 7, 0, 32768, 32768},
    {"kv_transfer", "v_small", 1, 0, 1207959552, 10895360, 0},
    {"kv_transfer", "v_small", 2, 0, 1207959552, 8536064, 2359296},
    {"kv_transfer", "v_small", 2, 1, 0, 2359296, 2359296},
    {"kv_transfer", "v_small", 4, 1, 1207959552, 8536064, 2359296},
    {"kv_transfer", "v_small", 8, 7, 0, 2359296, 2359296},
    {"kv_transfer", "v_odd", 1, 0, 6488064, 438528, 0},
    {"kv_transfer", "v_odd", 2, 0, 6488064, 413952, 24576},
    {"kv_transfer", "v_odd", 2, 1, 0, 24576, 24576},
    {"kv_transfer", "v_odd", 4, 1, 6488064, 413952, 24576},
    {"kv_transfer", "v_odd", 8, 7, 0, 24576, 24576},
    {"kv_transfer", "v_mid", 1, 0, 17179869184, 29360128, 0},
    {"kv_transfer", "v_mid", 2, 0, 17179869184, 12582912, 16777216},
    {"kv_transfer", "v_mid", 2, 1, 0, 16777216, 16777216},
    {"kv_transfer", "v_mid", 4, 1, 17179869184, 12582912, 16777216},
    {"kv_transfer", "v_mid", 8, 7, 0, 16777216, 16777216},
    {"kv_transfer", "v_awk", 1, 0, 2199912448, 11227648, 0},
    {"kv_transfer", "v_awk", 2, 0, 2199912448, 2634240, 8593408},
    {"kv_transfer", "v_awk", 2, 1, 0, 8593408, 8593408},
    {"kv_transfer", "v_awk", 4, 1, 2199912448, 2634240, 8593408},
    {"kv_transfer", "v_awk", 8, 7, 0, 8593408, 8593408},
    {"kv_transfer", "v_spare", 1, 0, 4194304, 114688, 0},
    {"kv_transfer", "v_spare", 2, 0, 4194304, 81920, 32768},
    {"kv_transfer", "v_spare", 2, 1, 0, 32768, 32768},
    {"kv_transfer", "v_spare", 4, 1, 4194304, 81920, 32768},
    {"kv_transfer", "v_spare", 8, 7, 0, 32768, 32768},
    {"kv_transfer", "v_hd64", 1, 0, 2199912448, 7468032, 0},
    {"kv_transfer", "v_hd64", 2, 0, 2199912448, 3171328, 4296704},
    {"kv_transfer", "v_hd64", 2, 1, 0, 4296704, 4296704},
    {"kv_transfer", "v_hd64", 4, 1, 2199912448, 3171328, 4296704},
    {"kv_transfer", "v_hd64", 8, 7, 0, 4296704, 4296704},
    {"kv_transfer", "short", 1, 0, 1099511627776, 822083584, 0},
    {"kv_transfer", "short", 2, 0, 1099511627776, 553648128, 268435456},
    {"kv_transfer", "short", 2, 1, 0, 268435456, 268435456},
    {"kv_transfer", "short", 4, 1, 1099511627776, 553648128, 268435456},
    {"kv_transfer", "short", 8, 7, 0, 268435456, 268435456},
    {"kv_transfer", "mid", 1, 0, 4398046511104, 1677721600, 0},
    {"kv_transfer", "mid", 2, 0, 4398046511104, 603979776, 1073741824},
    {"kv_transfer", "mid", 2, 1, 0, 1073741824, 1073741824},
    {"kv_transfer", "mid", 4, 1, 4398046511104, 603979776, 1073741824},
    {"kv_transfer", "mid", 8, 7, 0, 1073741824, 1073741824},
    {"kv_transfer", "long", 1, 0, 17592186044416, 5100273664, 0},
    {"kv_transfer", "long", 2, 0, 17592186044416, 805306368, 4294967296},
    {"kv_transfer", "long", 2, 1, 0, 4294967296, 4294967296},
    {"kv_transfer", "long", 4, 1, 17592186044416, 805306368, 4294967296},
    {"kv_transfer", "long", 8, 7, 0, 4294967296, 4294967296},
    {"moe_dsv3", "v_t1", 1, 0, 983040, 984064.0, 0},
    {"moe_dsv3", "v_t1", 2, 0, 983040, 590848.0, 0},
    {"moe_dsv3", "v_t1", 2, 1, 983040, 590848.0, 0},
    {"moe_dsv3", "v_t1", 4, 1, 983040, 394240.0, 0},
    {"moe_dsv3", "v_t1", 8, 7, 983040, 295936.0, 0},
    {"moe_dsv3", "v_t7", 1, 0, 6881280, 990208.0, 0},
    {"moe_dsv3", "v_t7", 2, 0, 6881280, 596992.0, 0},
    {"moe_dsv3", "v_t7", 2, 1, 6881280, 596992.0, 0},
    {"moe_dsv3", "v_t7", 4, 1, 6881280, 400384.0, 0},
    {"moe_dsv3", "v_t7", 8, 7, 6881280, 302080.0, 0},
    {"moe_dsv3", "v_t33", 1, 0, 129761280, 3999744.0, 0},
    {"moe_dsv3", "v_t33", 2, 0, 129761280, 2426880.0, 0},
    {"moe_dsv3", "v_t33", 2, 1, 129761280, 2426880.0, 0},
    {"moe_dsv3", "v_t33", 4, 1, 129761280, 1640448.0, 0},
    {"moe_dsv3", "v_t33", 8, 7, 129761280, 1247232.0, 0},
    {"moe_dsv3", "v_t130", 1, 0, 230031360, 1902592.0, 0},
    {"moe_dsv3", "v_t130", 2, 0, 230031360, 1116160.0, 0},
    {"moe_dsv3", "v_t130", 2, 1, 230031360, 1116160.0, 0},
    {"moe_dsv3", "v_t130", 4, 1, 230031360, 722944.0, 0},
    {"moe_dsv3", "v_t130", 8, 7, 230031360, 526336.0, 0},
    {"moe_dsv3", "v_one", 1, 0, 127795200, 1116160.0, 0},
    {"moe_dsv3", "v_one", 2, 0, 127795200, 722944.0, 0},
    {"moe_dsv3", "v_one", 2, 1, 127795200, 722944.0, 0},
    {"moe_dsv3", "v_one", 4, 1, 127795200, 526336.0, 0},
    {"moe_dsv3", "v_one", 8, 7, 127795200, 428032.0, 0},
    {"moe_dsv3", "v_e8", 1, 0, 76677120, 722944.0, 0},
    {"moe_dsv3", "v_e8", 2, 0, 76677120, 526336.0, 0},
    {"moe_dsv3", "v_e8", 2, 1, 76677120, 526336.0, 0},
    {"moe_dsv3", "v_e8", 4, 1, 76677120, 428032.0, 0},
    {"moe_dsv3", "v_e8", 8, 7, 76677120, 378880.0, 0},
    {"moe_dsv3", "v_mid", 1, 0, 14495514624, 30408704.0, 0},
    {"moe_dsv3", "v_mid", 2, 0, 14495514624, 17825792.0, 0},
    {"moe_dsv3", "v_mid", 2, 1, 14495514624, 17825792.0, 0},
    {"moe_dsv3", "v_mid", 4, 1, 14495514624, 11534336.0, 0},
    {"moe_dsv3", "v_mid", 8, 7, 14495514624, 8388608.0, 0},
    {"moe_dsv3", "prefill", 1, 0, 3246995275776, 910163968.0, 0},
    {"moe_dsv3", "prefill", 2, 0, 3246995275776, 557842432.0, 0},
    {"moe_dsv3", "prefill", 2, 1, 3246995275776, 557842432.0, 0},
    {"moe_dsv3", "prefill", 4, 1, 3246995275776, 381681664.0, 0},
    {"moe_dsv3", "prefill", 8, 7, 3246995275776, 293601280.0, 0},
    {"moe_dsv3", "decode", 1, 0, 101468602368, 796393472.0, 0},
    {"moe_dsv3", "decode", 2, 0, 101468602368, 444071936.0, 0},
    {"moe_dsv3", "decode", 2, 1, 101468602368, 444071936.0, 0},
    {"moe_dsv3", "decode", 4, 1, 101468602368, 267911168.0, 0},
    {"moe_dsv3", "decode", 8, 7, 101468602368, 179830784.0, 0},
    {"moe_dsv3", "prefill_rho3", 1, 0, 3246995275776, 910163968.0, 0},
    {"moe_dsv3", "prefill_rho3", 2, 0, 3246995275776, 557842432.0, 0},
    {"moe_dsv3", "prefill_rho3", 2, 1, 3246995275776, 557842432.0, 0},
    {"moe_dsv3", "prefill_rho3", 4, 1, 3246995275776, 381681664.0, 0},
    {"moe_dsv3", "prefill_rho3", 8, 7, 3246995275776, 293601280.0, 0},
    {"moe_dsv3", "prefill_skew", 1, 0, 3246995275776, 910163968.0, 0},
    {"moe_dsv3", "prefill_skew", 2, 0, 3246995275776, 557842432.0, 0},
    {"moe_dsv3", "prefill_skew", 2, 1, 3246995275776, 557842432.0, 0},
    {"moe_dsv3", "prefill_skew", 4, 1, 3246995275776, 381681664.0, 0},
    {"moe_dsv3", "prefill_skew", 8, 7, 3246995275776, 293601280.0, 0},
    {"moe_dsv3", "paper_2", 1, 0, 360777252864, 205520896.0, 0},
    {"moe_dsv3", "paper_2", 2, 0, 360777252864, 161480704.0, 0},
    {"moe_dsv3", "paper_2", 2, 1, 360777252864, 161480704.0, 0},
    {"moe_dsv3", "paper_5", 1, 0, 360777252864, 205520896.0, 0},
    {"moe_dsv3", "paper_5", 2, 0, 360777252864, 161480704.0, 0},
    {"moe_dsv3", "paper_5", 2, 1, 360777252864, 161480704.0, 0},
};

static void close_to(double got, double want, const char *what,
                     const struct want *w)
{
  if (!(fabs(got - want) <= 1e-9 * fabs(want) + 1e-9))
    fail_msg("%s %s R=%d rank %d: %s %.17g, want %.17g", w->wl, w->size, w->R,
             w->rank, what, got, want);
}

static int (*work_fn(const char *wl))(const struct wl_problem *,
                                      struct wl_work *)
{
  if (!strcmp(wl, "gemm_allgather"))
    return gemm_ag_work;
  if (!strcmp(wl, "flash_attn_cp"))
    return flash_attn_work;
  if (!strcmp(wl, "kv_transfer"))
    return kv_transfer_work;
  if (!strcmp(wl, "moe_dsv3"))
    return moe_work;
  return NULL;
}

static void to_problem(const char *params, int R, int rank,
                       struct wl_problem *p)
{
  char buf[256], *save = NULL, *tok;

  memset(p, 0, sizeof(*p));
  p->nranks = R;
  p->rank = rank;
  snprintf(buf, sizeof(buf), "%s", params);
  for (tok = strtok_r(buf, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    assert_non_null(eq);
    *eq = '\0';
    snprintf(p->params[p->nparams].name, WL_NAME_MAX, "%s", tok);
    p->params[p->nparams++].value = atoll(eq + 1);
  }
}

/* Every table row matches, and every size of every workload.ini has rows. */
static void test_declared_work(void **state)
{
  static const char *const wls[] = {"gemm_allgather", "flash_attn_cp",
                                    "kv_transfer", "moe_dsv3"};
  static struct workload w;
  size_t i, k;
  int s;

  (void)state;
  for (k = 0; k < sizeof(wls) / sizeof(wls[0]); k++) {
    char dir[256];
    struct err e = {0, ""};
    snprintf(dir, sizeof(dir), "%s/workloads/%s",
             getenv("CUCO_ROOT") ? getenv("CUCO_ROOT") : ".", wls[k]);
    if (workload_load(dir, &w, &e) != 0)
      fail_msg("%s: %s", dir, e.msg);
    for (s = 0; s < w.nsizes; s++) {
      int rows = 0;
      for (i = 0; i < sizeof(wants) / sizeof(wants[0]); i++) {
        const struct want *x = &wants[i];
        struct wl_problem p;
        struct wl_work got;
        if (strcmp(x->wl, wls[k]) || strcmp(x->size, w.sizes[s].name))
          continue;
        rows++;
        to_problem(w.sizes[s].params, x->R, x->rank, &p);
        memset(&got, 0, sizeof(got));
        assert_int_equal(work_fn(x->wl)(&p, &got), 0);
        close_to(got.flops, x->flops, "flops", x);
        close_to(got.hbm_bytes, x->hbm, "hbm bytes", x);
        close_to(got.link_bytes, x->link, "link bytes", x);
        if (x->R == 1)
          assert_true(got.link_bytes == 0);
      }
      if (rows < 1)
        fail_msg("%s size %s: no hand-computed row in test_sol.c", wls[k],
                 w.sizes[s].name);
    }
  }
}

/* A problem without its parameters is refused, not given zero work. */
static void test_bad_problem(void **state)
{
  struct wl_problem p;
  struct wl_work w;

  (void)state;
  to_problem("K=8", 1, 0, &p);
  assert_true(gemm_ag_work(&p, &w) < 0);
  to_problem("HQ=4", 1, 0, &p);
  assert_true(flash_attn_work(&p, &w) < 0);
  to_problem("S=4,SR=2", 1, 0, &p);
  assert_true(flash_attn_work(&p, &w) < 0);
  to_problem("DM=64", 1, 0, &p);
  assert_true(kv_transfer_work(&p, &w) < 0);
  to_problem("H=64", 1, 0, &p);
  assert_true(moe_work(&p, &w) < 0);
}

static struct rt_devinfo dev(const char *name, int major, int sms,
                             double clk_mhz, double mem_mhz, double bus)
{
  struct rt_devinfo d;

  memset(&d, 0, sizeof(d));
  snprintf(d.name, sizeof(d.name), "%s", name);
  d.cc_major = major;
  d.sms = sms;
  d.max_clock_khz = clk_mhz * 1e3;
  d.mem_clock_khz = mem_mhz * 1e3;
  d.bus_bits = bus;
  return d;
}

/* The datasheet table, and a derived value only where it is higher. */
static void test_peaks(void **state)
{
  struct rt_devinfo d = dev("NVIDIA H200", 9, 132, 1500, 2619, 6144);
  struct rt_peaks p;

  (void)state;
  assert_int_equal(rt_sol_peaks(&d, &p), 1);
  assert_true(p.bf16_flops == 989e12 && p.fp8_flops == 1979e12);
  assert_true(p.hbm_Bps == 4.8e12 && p.link_Bps == 450e9);
  assert_non_null(strstr(p.source, "H200"));
  d = dev("NVIDIA H100 80GB HBM3", 9, 132, 1500, 2600, 5120);
  assert_int_equal(rt_sol_peaks(&d, &p), 1);
  assert_true(p.bf16_flops == 989e12 && p.hbm_Bps == 3.35e12 &&
              p.link_Bps == 450e9);
  /* at 1.98 GHz the SMs could exceed the datasheet: 132*1.98e9*4096 */
  d = dev("NVIDIA H100 80GB HBM3", 9, 132, 1980, 2600, 5120);
  rt_sol_peaks(&d, &p);
  assert_true(fabs(p.bf16_flops - 132 * 1.98e9 * 4096) < 1e6);
  assert_true(fabs(p.fp8_flops - 2 * 132 * 1.98e9 * 4096) < 1e6);
  /* unknown: derived (A100-like: 108 SMs, 1.41 GHz, HBM2e 1593 MHz x 5120) */
  d = dev("NVIDIA A100-SXM4-80GB", 8, 108, 1410, 1593, 5120);
  assert_int_equal(rt_sol_peaks(&d, &p), 0);
  assert_true(fabs(p.bf16_flops - 108 * 1.41e9 * 2048) < 1e6);
  assert_true(fabs(p.hbm_Bps - 2 * 1.593e9 * 640) < 1e3);
  assert_true(p.link_Bps == 1800e9);
  assert_non_null(strstr(p.source, "derived"));
}

/* max(flops/peak, hbm/bw, link/bw), naming the limit; link only at R > 1. */
static void test_bound(void **state)
{
  struct rt_devinfo d = dev("NVIDIA H200", 9, 132, 1500, 2619, 6144);
  struct rt_peaks p;
  struct rt_bound b;
  struct wl_work w = {989e9, 4.8e9, 0, 0}; /* 1 ms compute, 1 ms HBM */

  (void)state;
  rt_sol_peaks(&d, &p);
  w.hbm_bytes = 2.4e9;
  rt_sol_bound(&w, &p, 1, &b);
  assert_true(fabs(b.ms - 1.0) < 1e-12 && !strcmp(b.limit, "compute"));
  assert_true(fabs(b.hbm_ms - 0.5) < 1e-12);
  w.hbm_bytes = 9.6e9;
  rt_sol_bound(&w, &p, 1, &b);
  assert_true(fabs(b.ms - 2.0) < 1e-12 && !strcmp(b.limit, "HBM"));
  w.link_bytes = 1.35e9; /* 3 ms at 450 GB/s */
  rt_sol_bound(&w, &p, 1, &b);
  assert_true(fabs(b.ms - 2.0) < 1e-12 && b.link_ms == 0);
  rt_sol_bound(&w, &p, 2, &b);
  assert_true(fabs(b.ms - 3.0) < 1e-12 && !strcmp(b.limit, "link"));
  w.fp8 = 1;
  w.flops = 1979e9 * 4; /* 4 ms at the fp8 peak */
  rt_sol_bound(&w, &p, 2, &b);
  assert_true(fabs(b.compute_ms - 4.0) < 1e-12 && !strcmp(b.limit, "compute"));
  memset(&w, 0, sizeof(w));
  rt_sol_bound(&w, &p, 2, &b);
  assert_true(b.ms == 0 && !strcmp(b.limit, "none"));
  /* gemm_allgather full_4k at one rank on an H200: compute bound */
  {
    struct wl_problem pr;
    to_problem("M=4096,K=8192,N=28672", 1, 0, &pr);
    assert_int_equal(gemm_ag_work(&pr, &w), 0);
    rt_sol_bound(&w, &p, 1, &b);
    assert_true(fabs(b.ms - 2.0 * 4096 * 8192 * 28672 / 989e12 * 1e3) < 1e-9);
    assert_true(b.ms > 1.94 && b.ms < 1.95);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_declared_work),
      cmocka_unit_test(test_bad_problem),
      cmocka_unit_test(test_peaks),
      cmocka_unit_test(test_bound),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
