# The canonical form of a CBOR sequence (file argument) on stdout: every map
# sorted by its encoded keys, everything else byte for byte (what
# apimachinery/src/cbor/canonical.rs does for the tests).
import sys,struct
def head(b,i):
    ib=b[i]; ai=ib&31; n={24:1,25:2,26:4,27:8}.get(ai,0)
    v=ai if ai<24 else int.from_bytes(b[i+1:i+1+n],'big')
    return ib>>5, v, i+1+n
def item(b,i):
    s=i; mt,v,i=head(b,i); out=b[s:i]
    if mt in (2,3): return out+b[i:i+v], i+v
    if mt==4:
        for _ in range(v): x,i=item(b,i); out+=x
        return out,i
    if mt==5:
        es=[]
        for _ in range(v):
            k,i=item(b,i); x,i=item(b,i); es.append(k+x)
        return out+b''.join(sorted(es)), i
    if mt==6: x,i=item(b,i); return out+x,i
    return out,i
b=open(sys.argv[1],'rb').read(); i=0; o=b''
while i<len(b): x,i=item(b,i); o+=x
sys.stdout.buffer.write(o)
