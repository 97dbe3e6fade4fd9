#!/usr/bin/env bash
# Records the sample traces the viewer (docs/viewer/index.html) opens, one per example that a
# docs page teaches, with the structured trace (EVLOOP_TRACE=json:PATH, docs/20-trace-format.md).
#
#   bash docs/traces/record.sh            # from the repository's root
#
# Any other program is recorded the same way:
#   EVLOOP_TRACE=json:my.jsonl cargo run --example NAME
# tcp_echo runs for thousands of iterations; EVLOOP_TRACE_ITERATIONS keeps its first ones,
# enough to see the connections open and the ping-pong begin, in a file small enough to commit.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=docs/traces
examples=(call_soon_does_not_wait pipe_reader task_trace gather_vs_taskgroup tcp_echo)
cargo build --quiet --examples
dir="${CARGO_TARGET_DIR:-target}/debug/examples"
for name in "${examples[@]}"; do
    limit=""
    if [ "$name" = tcp_echo ]; then limit=25; fi
    EVLOOP_BACKEND=epoll EVLOOP_TRACE="json:$out/$name.jsonl" EVLOOP_TRACE_ITERATIONS="$limit" \
        "$dir/$name" > /dev/null 2>&1
    printf '%-26s %5d lines %8d bytes\n' "$name" "$(wc -l < "$out/$name.jsonl")" \
        "$(wc -c < "$out/$name.jsonl")"
done

# The viewer embeds one sample (task_trace) so that it shows something at once from file://.
# `</` is written `<\/` (the same string in JSON) so that no line can close the script element.
page=docs/viewer/index.html
awk -v sample="$out/task_trace.jsonl" '
    /<script type="application\/x-ndjson" id="sample">/ {
        print
        while ((getline line < sample) > 0) { gsub(/<\//, "<\\/", line); print line }
        skip = 1
        next
    }
    skip && /<\/script>/ { skip = 0 }
    !skip { print }
' "$page" > "$page.new"
mv "$page.new" "$page"
echo "embedded $out/task_trace.jsonl in $page"
