import configparser, re
def sizes(wl):
    out=[]; sec=False
    for line in open(f"/work/wt/secrets/workloads/{wl}/workload.ini"):
        line=line.split(';')[0].strip()
        if line.startswith('['): sec = line=='[sizes]'; continue
        if sec and '=' in line:
            n,v=line.split('=',1); out.append((n.strip(), dict((a,int(b)) for a,b in (kv.split('=') for kv in v.strip().split(',')))))
    return out
def gemm(p,R,r):
    M,K,N=p['M'],p['K'],p['N']
    return (2*M*K*N/R, 2*(M*K/R + K*N/R + M*N/R), 2*(R-1)*M*K/R if R>1 else 0)
def attn(p,R,r):
    S=p.get('S') or p['SR']*R
    HQ,HKV,D,B=p.get('HQ',32),p.get('HKV',8),p.get('D',128),p.get('B',1)
    c=S//(2*R); own=2*c
    fl=4*D*HQ*B*(S*(S+1)//2)/R
    hbm=own*B*(2*HQ*D*2+2*HKV*D*2+HQ*4)
    need = 2*r if p.get('CONTIG',0)==1 else 2*R-2-r
    kv=need*c*B*2*HKV*D*2; q=own*B*HQ*D*2
    return (fl,hbm, min(kv,q) if R>1 and need>0 else 0)
def kv(p,R,r):
    L,DM,HKV,HD,NREQ=p['L'],p['DM'],p['HKV'],p['HD'],p.get('NREQ',1)
    awk=p.get('AWK',0); LEN=p.get('LEN',-1)
    ln=lambda i: [1,15,16,17,1000][i%5] if awk else LEN
    S=sum(ln(i) for i in range(NREQ)); W=HKV*HD
    P=1 if R==1 else (R+1)//2; Dn=R-P
    if r<P:
        fl=2*S*DM*2*W*L; hbm=S*DM*2+L*DM*2*W*2 + (S*4*W*L if R==1 else 0); link=S*4*W*L if R>1 else 0
    else:
        rows=sum(ln(g%NREQ) for g in range(P*NREQ) if P+g%Dn==r)
        fl=0; hbm=link=rows*4*W*L
    return (fl,hbm,link)
def moe(p,R,r):
    T,H,F,K=p['T'],p.get('H',7168),p.get('F',2048),p.get('K',8)
    sh=p.get('NOSH',0)!=1; ew=3*H*F*2
    return (6*H*F*(T*K+(T if sh else 0)), 4*T*H+(ew if sh else 0)+K/R*ew, 0)
F={'gemm_allgather':gemm,'flash_attn_cp':attn,'kv_transfer':kv,'moe_dsv3':moe}
print("static const struct want wants[] = {")
for wl,f in F.items():
    for n,p in sizes(wl):
        for R,r in [(1,0),(2,0),(2,1),(4,1),(8,7)]:
            if wl=='gemm_allgather' and (p['M']%R or p['N']%R): continue
            if wl=='moe_dsv3' and R>2 and p.get('MODE')==1: continue
            fl,h,l=f(p,R,r)
            print(f'    {{"{wl}", "{n}", {R}, {r}, {fl!r}, {h!r}, {l!r}}},')
print("};")
