#!/usr/bin/python3
"""An independent check of the registry's DSSE envelopes, for the tests.

Debian's python3-securesystemslib verifies the Ed25519 signature (its own
ed25519 code path, not WebCrypto) with the key taken from the registry's JWK
set; the DSSE v1 pre-authentication encoding is written here from the
specification (Debian's securesystemslib 0.26 predates its dsse module);
the in-toto statement is read with json and each FILE given is hashed with
hashlib and must be a subject with that digest.

usage: verify_dsse.py ENVELOPE.json KEYS.json [FILE ...]
exit 0 verified; 1 not verified (the reason on stderr)
"""
import base64
import hashlib
import json
import os
import sys

from securesystemslib.exceptions import UnverifiedSignatureError
from securesystemslib.signer import Signature, SSlibKey


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def pae(payload_type, body):
    t = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(body), body)


def fail(message):
    print("NOT VERIFIED: " + message, file=sys.stderr)
    sys.exit(1)


def main(envelope_path, keys_path, files):
    envelope = json.load(open(envelope_path))
    keys = {k["kid"]: k for k in json.load(open(keys_path))["keys"]}
    if envelope.get("payloadType") != "application/vnd.in-toto+json":
        fail("payloadType is %r" % envelope.get("payloadType"))
    body = base64.b64decode(envelope["payload"], validate=True)
    verified = None
    for sig in envelope.get("signatures", []):
        jwk = keys.get(sig.get("keyid"))
        if jwk is None or jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519":
            continue
        key = SSlibKey(sig["keyid"], "ed25519", "ed25519", {"public": b64url(jwk["x"]).hex()})
        try:
            key.verify_signature(Signature(sig["keyid"], base64.b64decode(sig["sig"]).hex()), pae(envelope["payloadType"], body))
            verified = sig["keyid"]
            break
        except UnverifiedSignatureError:
            continue
    if verified is None:
        fail("no signature verifies with the published keys")
    print("securesystemslib %s: ed25519 signature over DSSEv1 PAE verified, keyid %s" % (__import__("securesystemslib").__version__, verified))
    statement = json.loads(body)
    if statement.get("_type") != "https://in-toto.io/Statement/v1":
        fail("_type is %r" % statement.get("_type"))
    print("statement %s, predicate %s" % (statement["_type"], statement["predicateType"]))
    subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    for path in files:
        name = os.path.basename(path)
        digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
        if subjects.get(name) != digest:
            fail("%s hashes to %s, the statement says %s" % (name, digest, subjects.get(name)))
        print("subject %s sha256 %s matches" % (name, digest))
    if files and len(files) != len(subjects):
        fail("the statement has %d subjects, %d files were given" % (len(subjects), len(files)))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
