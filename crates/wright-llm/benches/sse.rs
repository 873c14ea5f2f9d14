//! SSE parsing throughput on a large synthetic stream: the bare parser, and the parser plus
//! the OpenAI and Anthropic decoders (what a streamed reply costs besides the network).
//! Measures, does not assert. Run: `cargo bench -p wright-llm --bench sse`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use wright_llm::sse::SseParser;
use wright_llm::{ProviderKind, StreamEvent, decode_recorded};

/// An OpenAI chat stream of `deltas` text chunks and one tool call with split arguments.
fn openai_stream(deltas: usize) -> Vec<u8> {
    let mut body = String::new();
    for index in 0..deltas {
        body.push_str(&format!(
            "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt\",\
             \"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"word {index} é \"}},\"finish_reason\":null}}]}}\n\n"
        ));
    }
    body.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
    body.into_bytes()
}

/// An Anthropic stream (named events, CRLF line ends) of `deltas` text deltas.
fn anthropic_stream(deltas: usize) -> Vec<u8> {
    let mut body = String::from(
        "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5}}}\r\n\r\n\
         event: content_block_start\r\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\r\n\r\n",
    );
    for index in 0..deltas {
        body.push_str(&format!(
            "event: content_block_delta\r\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"word {index} é \"}}}}\r\n\r\n"
        ));
    }
    body.push_str(
        "event: content_block_stop\r\ndata: {\"type\":\"content_block_stop\",\"index\":0}\r\n\r\n\
         event: message_delta\r\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\r\n\r\n\
         event: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n",
    );
    body.into_bytes()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn measure(name: &str, bytes: usize, events: usize, runs: usize, mut work: impl FnMut() -> usize) {
    // One warm-up run, then the median of `runs`.
    assert_eq!(work(), events, "{name}: event count");
    let samples: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            black_box(work());
            start.elapsed()
        })
        .collect();
    let time = median(samples).as_secs_f64();
    println!(
        "{name:<46} {:>9.1} MB/s {:>12.0} events/s  (median of {runs}, {:.2} MB, {events} events, {:.2} ms)",
        bytes as f64 / time / 1e6,
        events as f64 / time,
        bytes as f64 / 1e6,
        time * 1e3,
    );
}

fn parse(body: &[u8], chunk: usize) -> usize {
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    let mut count = 0;
    for piece in body.chunks(chunk) {
        parser.feed(piece, &mut out);
        count += out.len();
        out.clear();
    }
    parser.finish(&mut out);
    count + out.len()
}

fn main() {
    let deltas = 200_000;
    let openai = openai_stream(deltas);
    let anthropic = anthropic_stream(deltas);
    let runs = 7;
    println!("SSE throughput ({} text deltas per stream)", deltas);
    for chunk in [16 * 1024, 1500, 64] {
        measure(&format!("sse parser, openai stream, {chunk} B reads"), openai.len(), deltas + 2, runs, || {
            parse(&openai, chunk)
        });
    }
    measure("sse parser, anthropic CRLF stream, 1500 B reads", anthropic.len(), deltas + 5, runs, || {
        parse(&anthropic, 1500)
    });
    for (name, kind, body, events) in [
        ("parser + openai decoder, 1500 B reads", ProviderKind::Openai, &openai, deltas + 1),
        ("parser + anthropic decoder, 1500 B reads", ProviderKind::Anthropic, &anthropic, deltas + 2),
    ] {
        let chunks: Vec<&[u8]> = body.chunks(1500).collect();
        measure(name, body.len(), events, runs, || {
            let results = decode_recorded(kind, true, 200, "text/event-stream", &chunks);
            assert!(matches!(results.last(), Some(Ok(StreamEvent::Finish(_)))));
            results.len()
        });
    }
}
