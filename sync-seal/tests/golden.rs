//! Golden vectors: `tests/data/inputs.jsonl` (agmsg `sync_seal` requests; a body written
//! `{"repeat": s, "times": n}` is `s` repeated `n` times) and `tests/data/expected.jsonl`, what agmsg's
//! own `sealEnvelope` and `agePlaintextFrame` (scripts/internal/sync-cipher.mjs at agmsg 16d49bc, run
//! once under node 20) returned for each: the envelope (or, when large, the SHA-256 and length of its
//! `JSON.stringify` text), the age-v1 frame of the same message, or the error's state and message.

use agmsg_sync_seal::{Message, SealRequest, age_frame, seal};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn data(name: &str) -> Vec<Value> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn expand(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Object(o) => o["repeat"].as_str().unwrap().repeat(o["times"].as_u64().unwrap() as usize),
        other => panic!("a body is a string or a repeat: {other}"),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn seals_as_agmsgs_node_helper_does() {
    let (inputs, expected) = (data("inputs.jsonl"), data("expected.jsonl"));
    assert_eq!(inputs.len(), expected.len());
    assert!(inputs.len() > 60, "the vectors are all there");
    let (mut sealed, mut refused, mut frames) = (0, 0, 0);
    for (input, want) in inputs.iter().zip(&expected) {
        let name = input["name"].as_str().unwrap();
        assert_eq!(want["name"], name);
        let r = &input["request"];
        let p = &r["projection"];
        let body = expand(&p["body"]);
        let message = Message {
            body: &body,
            created_at: p["created_at"].as_str().unwrap(),
            from_agent: p["from_agent"].as_str().unwrap(),
            to_agent: p["to_agent"].as_str().unwrap(),
        };
        let recipients: Vec<String> = r["recipients"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect();
        let request = SealRequest {
            envelope_v: r["envelope_v"].as_u64().unwrap() as u32,
            cipher: r["cipher"].as_str().unwrap(),
            key_id: r["key_id"].as_str(),
            recipients: &recipients,
            max_blob_bytes: r["max_blob_bytes"].as_u64().unwrap(),
            team_id: r["team_id"].as_str().unwrap(),
            wire_id: r["wire_id"].as_str().unwrap(),
            protocol_version: r["protocol_version"].as_u64().unwrap() as u32,
        };
        match (seal(&message, &request), want.get("error")) {
            (Ok(envelope), None) => {
                let json = envelope.to_json();
                match want.get("envelope") {
                    Some(envelope) => {
                        // JSON.stringify wrote the same keys in this order.
                        let text = format!(
                            r#"{{"v":{},"cipher":{},"key_id":{},"blob":{}}}"#,
                            envelope["v"], envelope["cipher"], envelope["key_id"], envelope["blob"]
                        );
                        assert_eq!(json, text, "{name}");
                    }
                    None => {
                        assert_eq!(json.len() as u64, want["envelope_len"].as_u64().unwrap(), "{name}");
                        assert_eq!(hex(&Sha256::digest(json.as_bytes())), want["envelope_sha256"].as_str().unwrap(), "{name}");
                    }
                }
                sealed += 1;
                let frame = age_frame(1, request.team_id, request.wire_id, "epoch-1", &message).unwrap();
                match want.get("age_frame_hex") {
                    Some(h) => assert_eq!(hex(&frame), h.as_str().unwrap(), "{name}"),
                    None => {
                        assert_eq!(frame.len() as u64, want["age_frame_len"].as_u64().unwrap(), "{name}");
                        assert_eq!(hex(&Sha256::digest(&frame)), want["age_frame_sha256"].as_str().unwrap(), "{name}");
                    }
                }
                frames += 1;
            }
            (Err(error), Some(agmsg)) => {
                assert_eq!(error.state.as_str(), agmsg["state"].as_str().unwrap(), "{name}: {error}");
                let message = agmsg["message"].as_str().unwrap();
                assert!(error.message.starts_with(message), "{name}: agmsg says {message:?}, this crate {:?}", error.message);
                refused += 1;
            }
            (Ok(envelope), Some(agmsg)) => panic!("{name}: sealed {envelope:?}, agmsg refused: {agmsg}"),
            (Err(error), None) => panic!("{name}: refused ({error}), agmsg sealed it"),
        }
    }
    eprintln!("{sealed} envelopes and {frames} frames equal agmsg's, {refused} refusals agree");
    assert!(sealed >= 20 && refused >= 40, "{sealed} sealed, {refused} refused");
}
