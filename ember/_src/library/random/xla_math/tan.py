"""glibc's tanf and tan as XLA:CPU calls them: tanf is fdlibm's `__kernel_tanf` after a
double-precision reduction by pi/2 (|x| < 120); tan is IBM's s_tan.c (`__tan_fma`, |x| <= 25:
an odd polynomial, a 186-point table plus a correction, or a double-double reduction by
pi/2). Beyond those ranges lax.tan.
"""
from __future__ import annotations

import functools

import numpy as np

from ember._src.base import dtypes
from ember._src.base.config import enable_x64
from ember._src.library.lax import api as lax
from ember._src.library.random.xla_math.common import (
    _F32, _F64, _U32, _U64, _f32bits, _f32c, _f64c, _hex_table, _hexfloats, _lookup)
from ember._src.primitives.elementwise import fma


# --- glibc's float32 tan (tanf: fdlibm's __kernel_tanf after a double-precision reduction
# by pi/2; no fused multiply-adds) ---------------------------------------------------------

_TANF_T = [0x3EAAAAAB, 0x3E088889, 0x3D5D0DD1, 0x3CB327A4, 0x3C11371F, 0x3B6B6916, 0x3ABEDE48,
           0x3A1A26C8, 0x398137B9, 0x38A3F445, 0x3895C07A, 0xB79BAE5F, 0x37D95384]


def _clear_low12(v):
  return lax.bitcast_convert_type(lax.bitwise_and(lax.bitcast_convert_type(v, _U32),
                                                  np.uint32(0xFFFFF000)), _F32)


def _kernel_tanf(x, y, iy):
  """fdlibm's __kernel_tanf(x, y, iy): tan(x + y) (iy = 1) or -1/tan(x + y) (iy = -1),
  |x + y| <= pi/4, float32 throughout."""
  c, T = _f32c, [_f32bits(b) for b in _TANF_T]
  sel = lax.select
  ax = lax.abs(x)
  neg = lax.lt(lax.bitcast_convert_type(x, dtypes.int32), np.int32(0))
  sign = sel(neg, lax.full_like(x, -1), lax.full_like(x, 1))
  big = lax.ge(ax, _f32bits(0x3F2CA140))                       # |x| >= 0.6744
  one = lax.full_like(x, 1)
  # big: tan(pi/4 - x') by the complement, on |x| (x' = |x| + y with y's sign following)
  xb = lax.add(lax.sub(_f32bits(0x3F490FDA), ax),
               lax.sub(_f32bits(0x33222168), lax.mul(sign, y)))
  xs = sel(big, xb, x)
  ys = sel(big, lax.full_like(y, 0), y)
  z = lax.mul(xs, xs)
  w = lax.mul(z, z)
  horner = lambda ks: functools.reduce(lambda acc, k: lax.add(T[k], lax.mul(w, acc)), ks[1:],
                                       lax.full_like(w, T[ks[0]]))
  r = horner([11, 9, 7, 5, 3, 1])
  v = lax.mul(z, horner([12, 10, 8, 6, 4, 2]))
  s = lax.mul(z, xs)
  r = lax.add(ys, lax.mul(z, lax.add(lax.mul(s, lax.add(r, v)), ys)))
  r = lax.add(r, lax.mul(T[0], s))
  w = lax.add(xs, r)
  fiy = lax.convert_element_type(iy, _F32)
  out_big = lax.mul(sign, lax.sub(fiy, lax.mul(c(2), lax.sub(xs, lax.sub(
      lax.div(lax.mul(w, w), lax.add(w, fiy)), r)))))
  zh = _clear_low12(w)
  vv = lax.sub(r, lax.sub(zh, xs))
  a = lax.div(c(-1), w)
  t = _clear_low12(a)
  ss = lax.add(one, lax.mul(t, zh))
  out_m1 = lax.add(t, lax.mul(a, lax.add(ss, lax.mul(t, vv))))
  out = sel(big, out_big, sel(lax.eq(iy, np.int32(1)), w, out_m1))
  # big and the complement below 2**-13: the first-order formula
  tiny_c = lax.mul(lax.mul(sign, fiy), lax.sub(one, lax.mul(lax.mul(c(2), fiy), xb)))
  out = sel(lax.bitwise_and(big, lax.lt(lax.abs(xb), c(2.0 ** -13))), tiny_c, out)
  # |x| < 2**-13: x, or -1/x (1/|x| for x = 0)
  small = sel(lax.eq(iy, np.int32(1)), x,
              sel(lax.eq(x, c(0)), lax.div(one, ax), lax.div(c(-1), x)))
  return sel(lax.lt(ax, _f32bits(0x39000000)), small, out)


def _glibc_tanf(x):
  """glibc's tanf for |x| < 120 (|x| >= 120 needs its 4/pi table: lax.tan there)."""
  ax = lax.abs(x)
  with enable_x64(True):
    dx = lax.convert_element_type(x, _F64)
    r = lax.mul(dx, _f64c(float.fromhex("0x1.45F306DC9C883p+23")))
    n = lax.shift_right_arithmetic(lax.add(lax.convert_element_type(r, dtypes.int32),
                                           np.int32(0x800000)), np.int32(24))
    dx = lax.sub(dx, lax.mul(lax.convert_element_type(n, _F64),
                             _f64c(float.fromhex("0x1.921FB54442D18p0"))))
    y0 = lax.convert_element_type(dx, _F32)
    y1 = lax.convert_element_type(lax.sub(dx, lax.convert_element_type(y0, _F64)), _F32)
  iy = lax.sub(np.int32(1), lax.shift_left(lax.bitwise_and(n, np.int32(1)), np.int32(1)))
  reduced = lax.le(ax, _f32bits(0x3F490FDA))
  out = _kernel_tanf(lax.select(reduced, x, y0), lax.select(reduced, lax.full_like(x, 0), y1),
                     lax.select(reduced, lax.full_like(iy, 1), iy))
  out = lax.select(lax.lt(ax, _f32c(120.0)), out, lax.tan(x))
  return lax.select(lax.lt(ax, _f32c(np.inf)), out, lax.sub(x, x))


# --- glibc's float64 tan (`__tan_fma`, IBM's s_tan.c) for |x| <= 25 ------------------------

# (x_i, tan(x_i), 1/tan(x_i)) at i = 16..201 over 256, read off libm (utan.tbl's xfg)
_TAN_XFG = _hex_table("""
3fb000001e519d60 3fb0055796c4e240 402ff554628127b7 3fb100001b1a7010 3fb10668aab892b7
402e12c7be3fdf74 3fb200002505e350 3fb2079bff547824 402c65c5de853633 3fb2fffffcdc4252
3fb308f35eb16c68 402ae5dae56be74f 3fb3ffffe3ff849f 3fb40a71154999cc 40298c43046b7352
3fb4ffffedc9590f 3fb50c17429bdd80 4028538491b5d674 3fb6000000ee83f7 3fb60de7da80cc21
40273724ef21a2a7 3fb6ffffeb05ea41 3fb70fe4b8c51bea 40263370fae562ff 3fb7ffffdc0515f7
3fb812101db54498 402545530e7eab5c 3fb8ffffe384d7ab 3fb9146c2a8d3727 40246a33fd57f3fd
3fb9ffffe4832347 3fba16fad50e1050 40239fe2c5537a96 3fbb0000274540e3 3fbb19be7ae68517
4022e4813637e946 3fbbfffffebf2e9b 3fbc1cb88369cd19 4022367617aef223 3fbd000023529045
3fbd1febc11d7ef7 4021945fb8e43d4e 3fbdffffd872a829 3fbe23598ee4d6b7 4020fd0c76195d5f
3fbeffffff323b84 3fbf2704ec9073e5 40206f713020200f 3fc000000ce79195 3fc01577bc30cc61
401fd549d6564a88 3fc07fffee40e918 3fc0978d8279ac01 401edbb59294bc03 3fc100000cc091fd
3fc119c544dfb2f7 401df0bb067d8e18 3fc180000d9936a1 3fc19c1fb9085a4b 401d131a71ce3629
3fc1ffffed5f3188 3fc21e9dee74bf2d 401c41b6ff0cd655 3fc2800005f06a51 3fc2a141550b313f
401b7b921702e6d2 3fc2fffffe3d339e 3fc3240aa75f76df 401abfc8fcb6409d 3fc37fffed888d6f
3fc3a6fb13cc5db7 401a0d8f8ed5320d 3fc4000002ca050d 3fc42a13e25776bb 4019642dfa84c2bc
3fc47ffff2531f5c 3fc4ad55deb73404 4018c2fef86e9035 3fc5000013774992 3fc530c27d0ee307
4018296c370caf35 3fc57fffedddcb2d 3fc5b45a5db4347d 401796ee52190c0e 3fc5fffff41949a0
3fc6381f13bf986a 40170b092d2255fd 3fc67ffff834d3a1 3fc6bc118ec85952 4016854c62cf2268
3fc6fffffd9106ea 3fc74032f298f6f7 401605511f4f84a9 3fc780000f649a4f 3fc7c4846ca53abc
40158ab94809d175 3fc7ffffef06bbd8 3fc84906df7d76ad 4015152edd2b30a6 3fc88000021c6334
3fc8cdbbd965f986 4014a46251b74296 3fc8fffff38d0756 3fc952a428e173c7 4014380b17b59ebd
3fc98000104efca1 3fc9d7c14644d23c 4013cfe5cb1eabd5 3fca000009417b30 3fca5d14096d76aa
40136bb4b3723db0 3fca7fffeb1c23ec 3fcae29dab60288d 40130b3e783071d7 3fcafffffb171c13
3fcb685fa221a96b 4012ae4dd8c0747d 3fcb80000aba44be 3fcbee5aecdf241f 401254b1c6fad63b
3fcc0000113d2a3e 3fcc7490b3e92543 4011fe3c9a62c035 3fcc7ffff49e00ce 3fccfb020f59eab0
4011aac3e956a631 3fcd000005f611ab 3fcd81b089e6844e 40115a1ff391268d 3fcd800014764ceb
3fce089d27debf0d 40110c2bfbc84740 3fce000014bcea76 3fce8fc916dbc820 4010c0c5a00ca48e
3fce7ffffd7995bd 3fcf173588b50424 401077ccbe02169a 3fcf00000cc35436 3fcf9ee3fd21a40b
401031231ee7ffe8 3fcf800001d1da33 3fd0136ab7dbe15c 400fd95977d559e5 3fd00000060c13b2
3fd05785aaad4f18 400f549e2675d182 3fd0400003885492 3fd09bc3660542d7 400ed3e2df3f5fec
3fd08000052f5a13 3fd0e0249a195045 400e56f8fa68f2c8 3fd0c00002ba1af5 3fd124a9e2e7f24b
400dddb4bffe633f 3fd0fffff76642c1 3fd16953e162ffe6 400d67ed0311d5d5 3fd14000033602f0
3fd1ae235f49508e 400cf57ab8708266 3fd17ffffefd1a13 3fd1f318db2a9ba1 400c86398d11009e
3fd1bffff718365d 3fd238350c41e3ac 400c1a06e02be47c 3fd1ffffff001e00 3fd27d78b2f6395e
400bb0c1f2fe9a85 3fd23ffffe425a6a 3fd2c2e4618faabe 400b4a4c190b18df 3fd28000059ec1db
3fd30878d8583884 400ae6880cd82bc2 3fd2c000000dd081 3fd34e36affdb6d8 400a855a5270fc15
3fd2fffffc1dcd2b 3fd3941ea95875bc 400a26a8aa9502b6 3fd33ffff6c0d4a0 3fd3da31739845f5
4009ca5a4d2573a0 3fd3800006b16793 3fd4206fdbc088f0 400970579344e33a 3fd3c00007358fa3
3fd466da6f23311d 4009188a5aa612ea 3fd3fffffc3b18cf 3fd4ad71e9282e6b 4008c2dd641e643d
3fd44000000dd2a8 3fd4f4371fa3f2d1 40086f3c6072f821 3fd47ffffbb43713 3fd53b2ab3ac333c
40081d943da56692 3fd4bffffb113bf4 3fd5824d6e8ed9c2 4007cdd2a8add00f 3fd4fffff7f087c9
3fd5c9a007446496 40077fe6444588eb 3fd54000088b3814 3fd61123564125f9 400733be6281a765
3fd57ffff7d55966 3fd658d7e194a5d5 4006e94b73b47d1f 3fd5c00008bf2490 3fd6a0beb775b28d
4006a07e15b6ec28 3fd6000009fa853f 3fd6e8d865a66cfd 400659481c701269 3fd6400007595fca
3fd73125c0556a7c 4006139bbaae9d02 3fd68000031687da 3fd779a792e2cfd0 4005cf6bcae0882b
3fd6bffff5c8cfe2 3fd7c25e9fb452ed 40058cabc561f1cd 3fd6fffff81df231 3fd80b4bcfb4dab5
40054b4f8d3ca5d3 3fd73ffffa71385e 3fd8546fe007a9b6 40050b4bb3b22176 3fd78000024a9c2b
3fd89dcba7fcf5cf 4004cc953159cbe1 3fd7c00002eb62b8 3fd8e75fec0ba5cf 40048f218731eeea
3fd80000054a52d1 3fd9312d8bb822e9 400452e69170a729 3fd83ffff93a00a3 3fd97b354bb9ad2a
400417daae924e7f 3fd87ffffbdc91c1 3fd9c5782771b601 4003ddf478855799 3fd8bffff6d215e6
3fda0ff6e0ea4a0b 4003a52b189a0989 3fd9000002f734ef 3fda5ab2736bf579 40036d75e9244ca6
3fd9400004eef8b4 3fdaa5ab9fb6e3d0 400336ccc9089cb7 3fd98000041ec76a 3fdaf0e35176c7e4
40030127cb0b9506 3fd9c00008044e47 3fdb3c5a77071224 4002cc7f50d75ec7 3fda000001f8235b
3fdb8811e725782e 400298cc18fbfb37 3fda3ffffb8c6f08 3fdbd40a97b086f3 40026607154de04b
3fda7ffffb3d63e1 3fdc20457d9a3b8a 400234297e60bfbb 3fdabffff5f45c48 3fdc6cc37b8d45e6
4002032cdb1ace69 3fdb00000508b34c 3fdcb985a27e8d37 4001d30ad4459a2b 3fdb40000a84710c
3fdd068cc3e50155 4001a3bd775034dd 3fdb7ffff692e9d8 3fdd53d9c49d6627 4001753efe18066a
3fdbc0000280f14d 3fdda16de4e81013 40014789a38ea052 3fdc0000001121d1 3fddef49eac018f0
40011a9820b8be0c 3fdc3ffffef662aa 3fde3d6eea0c7070 4000ee6532f46ccd 3fdc800009845818
3fde8bddf36a8b1b 4000c2ebcac73476 3fdcbffffb0493bf 3fdeda97e0c60d10 40009827251c7836
3fdcfffffd52961f 3fdf299defb3e44b 40006e1274e459f5 3fdd3ffffe2319a4 3fdf78f117139490
400044a93e737e94 3fdd7ffffa4de596 3fdfc892638f49e8 40001be7231057a5 3fddbffffe729a69
3fe00c417c6ab019 3fffe78fbf612660 3fde000009d66802 3fe03461f6b883cf 3fff988ebc05a87c
3fde3ffffb211657 3fe05cab191db8e8 3fff4ac37bcfe6be 3fde80000a3f068a 3fe0851d95fb54f0
3ffefe26144ca408 3fdec00001adb060 3fe0adb9dc7b54f9 3ffeb2af5ebe52a7 3fdeffffff5c0d01
3fe0d68092550a8d 3ffe68580d71fdf0 3fdf3ffff93d5fcc 3fe0ff7245cb4374 3ffe1f193cce5040
3fdf7ffffa0dd18f 3fe1288f944dd508 3ffdd6ec298b874d 3fdfbffffd3a9f1a 3fe151d913750f3e
3ffd8fca5806a27e 3fdffffffc481400 3fe17b4f598944ca 3ffd49ad82532170 3fe01fffff53786c
3fe1a4f307d83d47 3ffd048f851bffeb 3fe03ffffee301b7 3fe1cec4b8a6a382 3ffcc06a7c519db6
3fe06000006e36bf 3fe1f8c5114eb8be 3ffc7d38a34d6786 3fe07ffffd60aa43 3fe222f4abeccecb
3ffc3af477342ac4 3fe0a000037762e8 3fe24d543f99efe8 3ffbf99875f54fab 3fe0bfffff1c6921
3fe277e4598e35d0 3ffbb91f8addd186 3fe0dfffff07154b 3fe2a2a5b6bc3986 3ffb79848301646d
3fe1000002fcdda4 3fe2cd9902a59f1e 3ffb3ac2705219bf 3fe1200001ce1140 3fe2f8bedf0a67c2
3ffafcd49ab8ae2a 3fe1400004d0f355 3fe3241808fcc7bf 3ffabfb6497b9a36 3fe1600000fb0c8a
3fe34fa52471618b 3ffa83630d26d117 3fe18000026f10b3 3fe37b66f7579056 3ffa47d66b4cf4b1
3fe19ffffd0978f8 3fe3a75e290cc78c 3ffa0d0c36c21315 3fe1bffffd94840b 3fe3d38b85b4e4a4
3ff9d30032f2ecef 3fe1dffffbda1ea1 3fe3ffefbf3cee2f 3ff999ae6770fed8 3fe1fffffc989533
3fe42c8b9c27900c 3ff96112e0d9f1ac 3fe22000012b8d26 3fe4595fe11975ca 3ff92929cdaa4e80
3fe2400004f4d6af 3fe4866d4d224131 3ff8f1ef815c34e8 3fe25ffffcc07bda 3fe4b3b498b7d010
3ff8bb6073e7ffa1 3fe28000042d9639 3fe4e136b64540d1 3ff88578f4374938 3fe2a00003be29a0
3fe50ef452bffd96 3ff85035c0042c06 3fe2bffffaa91f12 3fe53cee3e2f4e0d 3ff81b938542df07
3fe2dffffe884891 3fe56b256c1a2470 3ff7e78ee422ea70 3fe2fffffe87152b 3fe5999a9beaaaa1
3ff7b424d18fe9b3 3fe31fffffc1a721 3fe5c84eafe0e564 3ff78152338db8d4 3fe33fffff70a372
3fe5f74282191d64 3ff74f141122bcae 3fe360000436e836 3fe62676fde6ccff 3ff71d677644252c
3fe37ffffcbe9641 3fe655ecee9ffdaf 3ff6ec49a6fc0515 3fe39fffffb6d6ca 3fe685a55e67a1e1
3ff6bbb7bc2ae969 3fe3c00004934fec 3fe6b5a12cc07d75 3ff68baf10b02ef8 3fe3e00003f5cf7f
3fe6e5e13e59def6 3ff65c2d0e61500f 3fe4000005280ad9 3fe7166691ab4c3e 3ff62d2f19f01c90
3fe42000049efb65 3fe7473218af3b9d 3ff5feb2b86465e4 3fe440000035ccb6 3fe77844cb4ff1e5
3ff5d0b57c455428 3fe4600003346717 3fe7a99fba258778 3ff5a334f4392254 3fe4800003002575
3fe7db43d836768f 3ff5762edcf97e0c 3fe4a000055bf381 3fe80d3235edeefa 3ff549a0ea46e31f
3fe4c00004ce10e3 3fe83f6bd67dc1a8 3ff51d88ed82bcc4 3fe4e000016c60e1 3fe871f1ca0aaf31
3ff4f1e4bdacbf16 3fe4ffffff966f0a 3fe8a4c52bff2dae 3ff4c6b23917657e 3fe520000076e6eb
3fe8d7e7175651e8 3ff49bef4f459b05 3fe5400003d12d3b 3fe90b58a976ed56 3ff47199fdf24af4
3fe55ffffce7fa8d 3fe93f1af03a3a09 3ff447b05f13234b 3fe580000331b46a 3fe9732f38e83134
3ff41e3068d8b41b 3fe59ffffc14848e 3fe9a7968471b489 3ff3f5185de3aa73 3fe5bffffb7cd395
3fe9dc5224a8b955 3ff3cc664f8fff15 3fe5e000000dcc40 3fea11634df5b93e 3ff3a41875853228
3fe6000002efd2fc 3fea46cb30d16323 3ff37c2d187962ae 3fe61ffffeb8088a 3fea7c8b053920c0
3ff354a2891769a9 3fe6400000f3ca06 3feab2a428a1911a 3ff32d770a6f0a4a 3fe65ffffe9ec2f4
3feae917d4ce7239 3ff306a90751a948 3fe6800003d43966 3feb1fe7708b998a 3ff2e036d7a153c7
3fe69ffffab67783 3feb57142e575464 3ff2ba1f05006cb6 3fe6bffffcb65f89 3feb8e9f981efd2f
3ff2945fe948d9f7 3fe6dffffc5609a9 3febc68afaed6ff1 3ff26ef81533411e 3fe6fffffc4eef86
3febfed7c62205fe 3ff249e60e70978c 3fe72000004d98b3 3fec3787716968ad 3ff2252861be7751
3fe73ffffc155075 3fec709b5ec6fd4e 3ff200bdb5d53311 3fe760000498c203 3fecaa15323d08c1
3ff1dca493433f65 3fe77fffff1e5636 3fece3f64147c12c 3ff1b8dbbfe294a8 3fe7a0000226d45a
3fed1e404120eb7f 3ff19561d15f8278 3fe7c0000250a5aa 3fed58f4b112a1e1 3ff172358a59d565
3fe7e0000482f82e 3fed94153576bdf0 3ff14f55a22a1c5b 3fe800000205003e 3fedcfa364d69ff7
3ff12cc0e37eb26f 3fe81ffffbf99411 3fee0ba0ebf98f51 3ff10a7616ddd5d6 3fe840000248e3a3
3fee480f9bb7f565 3ff0e873fb84e05c 3fe860000145c157 3fee84f10a10b3ab 3ff0c6b97cbd7b1e
3fe88000022631b9 3feec2470be1f047 3ff0a5456d0b3ee6 3fe8a000045f7828 3fef00136c45ba1c
3ff08416af2a0f09 3fe8bfffffc686cf 3fef3e57f03c824b 3ff0632c33502220 3fe8dffffd8644c6
3fef7d168774261d 3ff04284dd5b3019 3fe8fffffe4e7937 3fefbc511a99a641 3ff0221f9f69840b
3fe920000435251f 3feffc099eb22390 3ff001fb6f7c51e8
""").reshape(186, 3)
_TAN_D = [_hexfloats([v])[0] for v in ("0x1.5555555555555p-2", "0x1.11111111107c6p-3",
                                       "0x1.ba1ba1cdb8745p-5", "0x1.664ed49cfc666p-6",
                                       "0x1.2385a3cf2e4eap-7")]      # d3, d5, ..., d11
_TAN_E0, _TAN_E1 = _hexfloats(["0x1.5555555554dbdp-2", "0x1.11112e0a6b45fp-3"])


def _tan_poly_odd(a, add):
  """add + a**3 (d3 + a**2 (d5 + ...)), the last step fused (tan(a) - a near 0, plus add)."""
  c = _f64c
  a2 = lax.mul(a, a)
  t = c(_TAN_D[4])
  for k in (3, 2, 1, 0):
    t = fma(a2, t, c(_TAN_D[k]))
  return fma(lax.mul(a, a2), t, add)


def _tan_table(w, ww):
  """z = w - x_i + ww for the nearest table point, p(z) ~ tan(z), and (f_i, g_i)."""
  c = _f64c
  i = lax.convert_element_type(fma(w, c(256.0), c(-15.5)), dtypes.int32)
  i = lax.clamp(np.int32(0), i, np.int32(185))
  xi, fi, gi = (_lookup(_TAN_XFG[:, j], i) for j in range(3))
  z = lax.add(lax.sub(w, xi), ww)
  z2 = lax.mul(z, z)
  pz = fma(lax.mul(z, z2), fma(z2, c(_TAN_E1), c(_TAN_E0)), z)
  return pz, fi, gi


def _glibc_tan(x):
  """glibc's tan for |x| <= 25 (beyond, its larger reductions are not rebuilt: lax.tan):
  x itself, an odd polynomial (|x| <= 0.0608), a table point plus a correction (<= 0.787),
  else reduced by pi/2 in double-double and the same two cases for tan or -cot."""
  c, sel = _f64c, lax.select
  w = lax.abs(x)
  sgn = sel(lax.ge(x, c(0)), lax.full_like(x, 1), lax.full_like(x, -1))
  small = _tan_poly_odd(x, x)                                      # x + x**3 p(x**2)
  pz, fi, gi = _tan_table(w, lax.full_like(x, 0))
  mid = lax.mul(lax.add(lax.div(lax.mul(lax.add(fi, gi), pz), lax.sub(gi, pz)), fi), sgn)
  # x = n pi/2 + a + da (pi/2 in three parts, fused multiply-adds)
  t = fma(x, c(float.fromhex("0x1.45f306dc9c883p-1")), c(1.5 * 2.0 ** 52))
  xn = lax.sub(t, c(1.5 * 2.0 ** 52))
  odd = lax.ne(lax.bitwise_and(lax.bitcast_convert_type(t, _U64), np.uint64(1)), np.uint64(0))
  nxn = lax.neg(xn)
  t1 = fma(nxn, c(float.fromhex("-0x1.dde973cp-27")),
              fma(nxn, c(float.fromhex("0x1.921fb58p0")), x))
  mp3 = c(float.fromhex("-0x1.cb3b399d747f2p-55"))
  a = fma(nxn, mp3, t1)
  da = fma(nxn, mp3, lax.sub(t1, a))
  neg_a = lax.lt(a, c(0))
  ya, yya = sel(neg_a, lax.neg(a), a), sel(neg_a, lax.neg(da), da)
  sy = sel(neg_a, lax.full_like(x, -1), lax.full_like(x, 1))
  # |a| <= 0.0608: tan = a + t2, or -cot = -1/(a + t2) in double-double (EADD, DIV2)
  t2 = _tan_poly_odd(a, da)
  b = lax.add(a, t2)
  db = sel(lax.gt(lax.abs(a), lax.abs(t2)), lax.add(lax.sub(a, b), t2), lax.add(lax.sub(t2, b), a))
  q = lax.div(c(1.0), b)
  u = lax.mul(q, b)
  uu = fma(q, b, lax.neg(u))
  cc = lax.div(fma(lax.neg(db), q, lax.add(lax.sub(lax.sub(c(1.0), u), uu), c(0.0))), b)
  zq = lax.add(q, cc)
  cot_small = lax.neg(lax.add(lax.add(lax.sub(q, zq), cc), zq))
  red_small = sel(odd, cot_small, b)
  # |a| > 0.0608: the table again, on (ya, yya)
  pz, fi, gi = _tan_table(ya, yya)
  num = lax.mul(lax.add(fi, gi), pz)
  red_tan = lax.mul(lax.add(lax.div(num, lax.sub(gi, pz)), fi), sy)
  red_cot = lax.mul(lax.sub(gi, lax.div(num, lax.add(pz, fi))), lax.neg(sy))
  red = sel(lax.le(ya, c(float.fromhex("0x1.f212dp-5"))), red_small, sel(odd, red_cot, red_tan))
  g = lambda h: c(float.fromhex(h))
  out = sel(lax.le(w, g("0x1.92f1ap-1")), mid, sel(lax.le(w, c(25.0)), red, lax.tan(x)))
  out = sel(lax.le(w, g("0x1.f212dp-5")), small, out)
  out = sel(lax.le(w, g("0x1.b096cp-27")), x, out)
  return sel(lax.lt(w, c(np.inf)), out, lax.sub(x, x))
