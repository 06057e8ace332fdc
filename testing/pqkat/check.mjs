// check.mjs: recomputes fips-go's post-quantum upgrade vectors — of
// sessions (testing/pqkat/vectors.json, written by control/session's
// TestPQKAT) and of links (link_vectors.json, "layer": "link", written by
// control/peer's TestLinkPQKAT) — with independent implementations:
// ML-KEM-768 from @noble/post-quantum, SHA-256, HKDF and HMAC from
// @noble/hashes. The key schedule and the message layouts are
// re-implemented here from docs/wire.md, not from the Go code. Usage: node
// check.mjs vectors.json (control/session's TestPQKATIndependent and
// control/peer's TestLinkPQKATIndependent run it).
import { readFileSync } from 'node:fs';
import { ml_kem768 } from '@noble/post-quantum/ml-kem.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { hmac } from '@noble/hashes/hmac.js';

const v = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const hex = (b) => Buffer.from(b).toString('hex');
const unhex = (s) => new Uint8Array(Buffer.from(s, 'hex'));
const utf8 = (s) => new TextEncoder().encode(s);
const cat = (...parts) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
};

let checks = 0, failed = 0;
const eq = (what, got, want) => {
  checks++;
  if (got !== want) { failed++; console.error(`pqkat: ${what}: got ${got}, want ${want}`); }
};

// ML-KEM-768: key generation from d ‖ z, deterministic encapsulation.
const { publicKey: ek, secretKey: dk } = ml_kem768.keygen(unhex(v.dk_seed));
const { cipherText: ct, sharedSecret: ss } = ml_kem768.encapsulate(ek, unhex(v.encaps_random));
eq('ek sha256', hex(sha256(ek)), v.ek_sha256);
eq('ct sha256', hex(sha256(ct)), v.ct_sha256);
eq('shared secret', hex(ss), v.shared_secret);
eq('decapsulated secret', hex(ml_kem768.decapsulate(ct, dk)), v.shared_secret);

// Key schedule (docs/wire.md, "Post-quantum upgrade"): the session's
// label and payloads (ek, ct), or the link's label and payloads, each
// headed by the sender's new receiver index, u32le.
const link = v.layer === 'link';
const label = link ? 'fips-go/link-pq/v1' : 'fips-go/pq/v1';
const u32le = (n) => { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, n, true); return b; };
const offerPayload = link ? cat(u32le(v.offer_index), ek) : ek;
const acceptBody = link ? cat(u32le(v.accept_index), ct) : ct;
const id = unhex(v.exchange_id);
const th = sha256(cat(utf8(label + '/transcript'), id, offerPayload, acceptBody));
eq('transcript hash', hex(th), v.transcript_hash);
const info = cat(utf8(label), new Uint8Array([0]), utf8(v.suite), new Uint8Array([0]),
  unhex(v.offerer_static), unhex(v.answerer_static), th);
const okm = hkdf(sha256, ss, unhex(v.exporter), info, 128);
eq('key offerer→answerer', hex(okm.slice(0, 32)), v.key_offerer_to_answerer);
eq('key answerer→offerer', hex(okm.slice(32, 64)), v.key_answerer_to_offerer);
eq('confirm key', hex(okm.slice(64, 96)), v.key_confirm);
eq('next exporter', hex(okm.slice(96, 128)), v.next_exporter);
const kc = okm.slice(64, 96);
const acceptTag = hmac(sha256, kc, cat(utf8(label + '/accept'), th));
eq('accept tag', hex(acceptTag), v.accept_tag);

// Fragments: 616 bytes each = version 1, kind, index, count, id(8),
// total u16le, chunk length u16le, chunk (≤ 600), zero padding.
const fragments = (kind, payload) => {
  const count = Math.ceil(payload.length / 600);
  const out = [];
  for (let i = 0; i < count; i++) {
    const chunk = payload.slice(i * 600, Math.min((i + 1) * 600, payload.length));
    const b = new Uint8Array(616);
    b.set([1, kind, i, count]);
    b.set(id, 4);
    new DataView(b.buffer).setUint16(12, payload.length, true);
    new DataView(b.buffer).setUint16(14, chunk.length, true);
    b.set(chunk, 16);
    out.push(hex(b));
  }
  return out;
};
if (link) {
  // A link message is the type byte 0xE0 and a fragment; links have no
  // confirm.
  const msgs = (kind, payload) => fragments(kind, payload).map((f) => 'e0' + f);
  eq('offer messages', JSON.stringify(msgs(1, offerPayload)), JSON.stringify(v.offer_messages));
  eq('accept messages', JSON.stringify(msgs(2, cat(acceptBody, acceptTag))), JSON.stringify(v.accept_messages));
} else {
  const confirmTag = hmac(sha256, kc, cat(utf8(label + '/confirm'), th));
  eq('confirm tag', hex(confirmTag), v.confirm_tag);
  eq('offer fragments', JSON.stringify(fragments(1, ek)), JSON.stringify(v.offer_fragments));
  eq('accept fragments', JSON.stringify(fragments(2, cat(ct, acceptTag))), JSON.stringify(v.accept_fragments));
  eq('confirm fragments', JSON.stringify(fragments(3, confirmTag)), JSON.stringify(v.confirm_fragments));
}

console.log(`pqkat (${link ? 'link' : 'session'}): ${checks - failed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
