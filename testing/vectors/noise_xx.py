#!/usr/bin/env python3
"""An independent re-implementation of upstream FIPS's `next` Noise XX link
handshake (src/noise/handshake.rs on branch next, read as the spec), with
pyca/cryptography, to derive the vectors control/noise/xx_test.go pins.
It shares no code with fips-go. Run: python3 testing/vectors/noise_xx.py

Upstream's deviations from textbook Noise, followed here: DH is SHA-256 of
the shared point's x coordinate; every handshake AEAD has empty
associated data; msg1 carries no payload and no tag; the epoch (and the
optional negotiation payload) is EncryptAndHash'ed after the message's
tokens.
"""
import hashlib

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

NAME = b"Noise_XX_secp256k1_ChaChaPoly_SHA256"


def priv(b):
    return ec.derive_private_key(int.from_bytes(b, "big"), ec.SECP256K1())


def pub_bytes(k):
    from cryptography.hazmat.primitives import serialization
    return k.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.CompressedPoint)


def pub_from(b):
    return ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256K1(), b)


def dh(k, pub):
    return hashlib.sha256(k.exchange(ec.ECDH(), pub)).digest()  # x only, hashed


def hkdf2(ck, ikm):
    out = HKDF(algorithm=hashes.SHA256(), length=64, salt=ck, info=b"").derive(ikm)
    return out[:32], out[32:]


class Sym:
    def __init__(self):
        self.h = hashlib.sha256(NAME).digest() if len(NAME) > 32 else NAME.ljust(32, b"\0")
        self.ck = self.h
        self.k = None
        self.n = 0

    def mix_hash(self, d):
        self.h = hashlib.sha256(self.h + d).digest()

    def mix_key(self, ikm):
        self.ck, self.k = hkdf2(self.ck, ikm)
        self.n = 0

    def nonce(self):
        n = b"\0" * 4 + self.n.to_bytes(8, "little")
        self.n += 1
        return n

    def enc(self, p):
        c = ChaCha20Poly1305(self.k).encrypt(self.nonce(), p, b"")
        self.mix_hash(c)
        return c

    def dec(self, c):
        p = ChaCha20Poly1305(self.k).decrypt(self.nonce(), c, b"")
        self.mix_hash(c)
        return p

    def split(self):
        return hkdf2(self.ck, b"")


def run(s_i, s_r, e_i, e_r, epoch_i, epoch_r, pay2, pay3):
    I, R = Sym(), Sym()
    # msg1: -> e
    m1 = pub_bytes(e_i)
    I.mix_hash(m1)
    R.mix_hash(m1)
    re_i = pub_from(m1)
    # msg2: <- e, ee, s, es, epoch [, payload]
    m2 = pub_bytes(e_r)
    R.mix_hash(m2)
    R.mix_key(dh(e_r, re_i))
    m2 += R.enc(pub_bytes(s_r))
    R.mix_key(dh(s_r, re_i))
    m2 += R.enc(epoch_r)
    if pay2 is not None:
        m2 += R.enc(pay2)
    I.mix_hash(m2[:33])
    re_r = pub_from(m2[:33])
    I.mix_key(dh(e_i, re_r))
    rs = I.dec(m2[33:82])
    I.mix_key(dh(e_i, pub_from(rs)))
    assert I.dec(m2[82:106]) == epoch_r
    if pay2 is not None:
        assert I.dec(m2[106:]) == pay2
    # msg3: -> s, se, epoch [, payload]
    m3 = I.enc(pub_bytes(s_i))
    I.mix_key(dh(s_i, re_r))
    m3 += I.enc(epoch_i)
    if pay3 is not None:
        m3 += I.enc(pay3)
    ri = R.dec(m3[:49])
    R.mix_key(dh(e_r, pub_from(ri)))
    assert R.dec(m3[49:73]) == epoch_i
    if pay3 is not None:
        assert R.dec(m3[73:]) == pay3
    assert I.split() == R.split()
    k1, k2 = I.split()
    return m1, m2, m3, k1, k2, I.h


def main():
    a = bytes.fromhex("0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20")
    b = bytes.fromhex("b102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1fb0")
    epoch_i = bytes(range(0xA0, 0xA8))
    epoch_r = bytes(range(0xB0, 0xB8))
    # Initiator A, responder B; ephemeral secrets 0x55×32 and 0x66×32.
    # The negotiation payloads: format 0, versions 1..1, features 0x78,
    # and msg3's with a TLV_REKEY_OF of index 0x01020304.
    pay2 = bytes([0, 0x11]) + (0x78).to_bytes(8, "little")
    pay3 = pay2 + (1).to_bytes(2, "little") + (4).to_bytes(2, "little") + (0x01020304).to_bytes(4, "little")
    for name, p2, p3 in (("bare", None, None), ("negotiation", pay2, pay3)):
        m1, m2, m3, k1, k2, h = run(priv(a), priv(b), priv(b"\x55" * 32), priv(b"\x66" * 32), epoch_i, epoch_r, p2, p3)
        print(name)
        for label, v in (("msg1", m1), ("msg2", m2), ("msg3", m3), ("k1", k1), ("k2", k2), ("h", h)):
            print(f"  {label} {v.hex()}")


if __name__ == "__main__":
    main()
