#!/usr/bin/env python3
"""Draws the six explanatory pictures of docs/ as SVG files, next to this script.

    python3 docs/img/make.py              rewrite iteration.svg, task-step.svg,
                                          io-sequence.svg, microtasks.svg,
                                          timer-slots.svg and socket-state.svg
    python3 docs/img/make.py --dark DIR   also write DIR/NAME-dark.svg, the same drawings
                                          with the dark colours applied unconditionally
                                          (to look at the dark variant with a renderer that
                                          ignores CSS media queries, such as rsvg-convert)

The SVG files are checked in; run this from the repository's root after editing a drawing
below, then look at the result as an image on a light and a dark background, for example
(`target/` is not checked in):

    python3 docs/img/make.py --dark target/pictures
    rsvg-convert -b white docs/img/iteration.svg -o target/pictures/iteration-light.png
    rsvg-convert -b '#0d1117' target/pictures/iteration-dark.svg \
        -o target/pictures/iteration-dark.png

Every picture draws on a card of its own: light by default, dark under
`@media (prefers-color-scheme: dark)` (which browsers apply to an SVG shown by `<img>`), so it
reads on either background, also where the media query is ignored. Plain Python 3, no
packages; fonts are the generic `sans-serif` and `monospace`; no scripts, no external
references. `tests/pictures.rs` checks the files this writes.

Every label names something real: a step of `src/reactor/iteration.rs`, a type or function of
`src/`, or a syscall. When a name changes in the code, change it here too.
"""

import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Colours: (class, light, dark). "b-*" are box fills and borders, "l-*" lines and arrowheads.
LIGHT = """
.card{fill:#ffffff;stroke:#d0d7de}
text{font-family:sans-serif;font-size:13px;fill:#1f2328}
.m{font-family:monospace;font-size:12px}
.s{font-size:11.5px}
.t{font-size:17px;font-weight:bold}
.h{font-weight:bold}
.mu{fill:#59636e}
.b-step{fill:#eaf2ff;stroke:#3b6fc4}
.b-io{fill:#e6f6ea;stroke:#2d8a4a}
.b-tm{fill:#fff0e0;stroke:#c2610c}
.b-th{fill:#f5ecff;stroke:#8a4fd0}
.b-q{fill:#fff8d6;stroke:#a27a00}
.b-task{fill:#ffecef;stroke:#c03a55}
.b-n{fill:#f4f5f7;stroke:#9aa3ad}
.b-band{fill:#f6f8fa;stroke:none}
.bg{fill:#ffffff}
.l-n{stroke:#59636e}
.l-io{stroke:#2d8a4a}
.l-tm{stroke:#c2610c}
.l-th{stroke:#8a4fd0}
.l-q{stroke:#a27a00}
.l-task{stroke:#c03a55}
.l-step{stroke:#3b6fc4}
.h-n{fill:#59636e}
.h-io{fill:#2d8a4a}
.h-tm{fill:#c2610c}
.h-th{fill:#8a4fd0}
.h-q{fill:#a27a00}
.h-task{fill:#c03a55}
.h-step{fill:#3b6fc4}
"""

DARK = """
.card{fill:#0d1117;stroke:#3d444d}
text{fill:#e6edf3}
.mu{fill:#9198a1}
.b-step{fill:#10243f;stroke:#5b9bf0}
.b-io{fill:#0f2d1b;stroke:#48b868}
.b-tm{fill:#3a2208;stroke:#e08a3c}
.b-th{fill:#2a1a45;stroke:#b287f0}
.b-q{fill:#332a05;stroke:#d4a72c}
.b-task{fill:#3a1420;stroke:#e86b85}
.b-n{fill:#1c2128;stroke:#656c76}
.b-band{fill:#161b22}
.bg{fill:#0d1117}
.l-n{stroke:#9198a1}
.l-io{stroke:#48b868}
.l-tm{stroke:#e08a3c}
.l-th{stroke:#b287f0}
.l-q{stroke:#d4a72c}
.l-task{stroke:#e86b85}
.l-step{stroke:#5b9bf0}
.h-n{fill:#9198a1}
.h-io{fill:#48b868}
.h-tm{fill:#e08a3c}
.h-th{fill:#b287f0}
.h-q{fill:#d4a72c}
.h-task{fill:#e86b85}
.h-step{fill:#5b9bf0}
"""

KINDS = ["n", "io", "tm", "th", "q", "task", "step"]


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class Svg:
    """One drawing: elements in painting order, then `render` wraps them."""

    def __init__(self, width, height):
        self.w, self.h = width, height
        self.parts = []

    def rect(self, x, y, w, h, cls, rx=6, dash=False):
        extra = ' stroke-dasharray="5,4"' if dash else ""
        self.parts.append(
            f'<rect x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" rx="{rx}" '
            f'class="{cls}" stroke-width="1.5"{extra}/>'
        )

    def text(self, x, y, s, cls="", anchor="start"):
        c = f' class="{cls}"' if cls else ""
        a = f' text-anchor="{anchor}"' if anchor != "start" else ""
        self.parts.append(f'<text x="{x:g}" y="{y:g}"{c}{a}>{esc(s)}</text>')

    def lines(self, x, y, rows, cls="", anchor="start", step=16):
        """Several lines of text, the first baseline at y."""
        for i, row in enumerate(rows):
            if isinstance(row, tuple):
                s, c = row
            else:
                s, c = row, cls
            self.text(x, y + i * step, s, c, anchor)

    def path(self, d, kind="n", arrow=True, dash=False, width=1.6):
        extra = ' stroke-dasharray="6,4"' if dash else ""
        end = f' marker-end="url(#h-{kind})"' if arrow else ""
        self.parts.append(
            f'<path d="{d}" class="l-{kind}" fill="none" stroke-width="{width}"{extra}{end}/>'
        )

    def arrow(self, x1, y1, x2, y2, kind="n", dash=False, width=1.6):
        self.path(f"M{x1:g},{y1:g} L{x2:g},{y2:g}", kind, True, dash, width)

    def head(self, x, y, angle_deg, kind="n", size=9):
        """A free-standing arrowhead pointing at angle_deg, its tip at (x, y)."""
        a = math.radians(angle_deg)
        bx, by = x - size * math.cos(a), y - size * math.sin(a)
        px, py = -math.sin(a) * size * 0.5, math.cos(a) * size * 0.5
        self.parts.append(
            f'<path d="M{x:.1f},{y:.1f} L{bx + px:.1f},{by + py:.1f} '
            f'L{bx - px:.1f},{by - py:.1f} Z" class="h-{kind}"/>'
        )

    def render(self, title, desc, dark_always=False):
        css = LIGHT + (DARK if dark_always else "@media (prefers-color-scheme: dark){" + DARK + "}")
        markers = "".join(
            f'<marker id="h-{k}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
            f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 Z" '
            f'class="h-{k}"/></marker>'
            for k in KINDS
        )
        body = "\n".join(self.parts)
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.w}" height="{self.h}" '
            f'viewBox="0 0 {self.w} {self.h}" role="img">\n'
            f"<title>{esc(title)}</title>\n<desc>{esc(desc)}</desc>\n"
            f"<style>{css}</style>\n<defs>{markers}</defs>\n"
            f'<rect x="1" y="1" width="{self.w - 2}" height="{self.h - 2}" rx="10" '
            f'class="card" stroke-width="1"/>\n{body}\n</svg>\n'
        )


# ---------------------------------------------------------------------------------------------
# iteration.svg: the six steps as a cycle, and what feeds the ready deque


def iteration():
    g = Svg(900, 640)
    g.text(24, 34, "One iteration: six steps around one ready deque", "t")
    g.text(24, 54, "EventLoop::iterate (src/reactor/iteration.rs); run_forever calls it again "
           "and again", "mu")

    cx, cy, rx, ry = 340, 262, 232, 132
    bw, bh = 184, 54
    steps = [
        ("1 flush_interest", "apply interest changes"),
        ("2 choose_timeout", "0, deadline − now, or block"),
        ("3 wait", "Selector::select: sleeps here"),
        ("4 dispatch_io", "queue ready fds' callbacks"),
        ("5 expire_timers", "queue every due timer"),
        ("6 run_ready", "run n queued entries, FIFO"),
    ]
    angles = [-120, -60, 0, 60, 120, 180]
    # The track, then an arrowhead between each pair of neighbouring steps (clockwise).
    g.parts.append(
        f'<ellipse cx="{cx}" cy="{cy}" rx="{rx}" ry="{ry}" class="l-step" fill="none" '
        f'stroke-width="2"/>'
    )
    for a in [-150, -90, -30, 30, 90, 150]:
        t = math.radians(a)
        x, y = cx + rx * math.cos(t), cy + ry * math.sin(t)
        tangent = math.degrees(math.atan2(ry * math.cos(t), -rx * math.sin(t)))
        g.head(x, y, tangent, "step", 12)
    centres = []
    for (name, what), a in zip(steps, angles):
        t = math.radians(a)
        x, y = cx + rx * math.cos(t), cy + ry * math.sin(t)
        centres.append((x, y))
        g.rect(x - bw / 2, y - bh / 2, bw, bh, "b-step")
        g.text(x, y - 5, name, "m h", "middle")
        g.text(x, y + 14, what, "s", "middle")

    # The timer heap, inside the ring: step 2 asks it, step 5 empties it.
    hx, hy, hw, hh = 256, 226, 168, 54
    g.rect(hx, hy, hw, hh, "b-tm")
    g.text(hx + hw / 2, hy + 21, "timer heap (Timers)", "h", "middle")
    g.text(hx + hw / 2, hy + 39, "call_later, call_at", "m", "middle")
    x2, y2 = centres[1]
    g.arrow(hx + hw - 20, hy, x2 - 40, y2 + bh / 2 + 2, "tm")
    g.text(396, 200, "timeout", "m mu", "end")
    x5, y5 = centres[4]
    g.arrow(hx + 30, hy + hh, x5 + 10, y5 - bh / 2 - 2, "tm")
    g.text(166, 318, "expire", "m mu")

    # Sources on the right.
    sx, sw = 700, 180
    g.rect(sx, 78, sw, 66, "b-th")
    g.text(sx + sw / 2, 98, "other threads", "h", "middle")
    g.text(sx + sw / 2, 116, "call_soon_threadsafe", "m", "middle")
    g.text(sx + sw / 2, 133, "Waker::wake", "m", "middle")
    g.rect(sx, 226, sw, 72, "b-io")
    g.text(sx + sw / 2, 246, "the kernel", "h", "middle")
    g.text(sx + sw / 2, 264, "fds ready to read/write;", "s", "middle")
    g.text(sx + sw / 2, 281, "the loop's waker fd", "s", "middle")
    g.arrow(sx + sw / 2, 144, sx + sw / 2, 224, "th")
    g.lines(sx + sw / 2 + 8, 170, ["remote queue,", "then write the", "waker fd"], "s mu")
    x3, y3 = centres[2]
    g.arrow(sx, 262, x3 + bw / 2 + 2, 262, "io")
    g.text((x3 + bw / 2 + sx) / 2, 221, "events", "s mu", "middle")

    # The deque at the bottom; every feeder joins the bus that ends at its back.
    bus_y = 452
    dq_y, dq_h = 488, 60
    back_x = 868
    x4, y4 = centres[3]
    g.path(f"M{x5:g},{y5 + bh / 2:g} L{x5:g},{bus_y:g}", "tm", arrow=False)
    g.path(f"M{x4:g},{y4 + bh / 2:g} L{x4:g},{bus_y:g}", "io", arrow=False)
    g.rect(sx, 340, sw, 76, "b-task")
    g.text(sx + sw / 2, 360, "on the loop's thread", "h", "middle")
    g.text(sx + sw / 2, 378, "call_soon", "m", "middle")
    g.text(sx + sw / 2, 395, "Waker::wake", "m", "middle")
    g.text(sx + sw / 2, 410, "(callbacks and tasks)", "s mu", "middle")
    lt = sx + sw / 2
    g.path(f"M{lt:g},416 L{lt:g},{bus_y:g}", "task", arrow=False)
    g.path(f"M{x5:g},{bus_y:g} L{back_x},{bus_y:g} L{back_x},{dq_y - 2:g}", "q", width=2.2)
    g.lines(x5 + 8, 420, ["Ready::Timer", "(due timers)"], "m")
    g.lines(x4 + 8, 420, ["Ready::Io, Ready::Remote,", "Ready::Step"], "m")
    g.lines(lt - 8, 430, ["Ready::Callback,", "Ready::Step"], "m", "end")
    g.text(back_x - 6, bus_y + 22, "push_back", "m mu", "end")

    g.rect(24, dq_y, back_x + 14 - 24, dq_h, "b-q")
    g.text(36, dq_y + 20, "ready deque", "h")
    g.text(36, dq_y + 37, "VecDeque<Ready>", "m")
    g.text(36, dq_y + 53, "front", "s mu")
    cells = [
        ("Ready::Callback", "call_soon earlier"),
        ("Ready::Io", "an fd's reader"),
        ("Ready::Step", "the task it wakes"),
        ("Ready::Remote", "threadsafe post"),
        ("Ready::Timer", "a due timer"),
    ]
    c0, cw = 150, 112
    for i, (kind, what) in enumerate(cells):
        x = c0 + i * (cw + 6)
        g.rect(x, dq_y + 8, cw, 44, "b-task" if i == 2 else "b-n", rx=4)
        g.text(x + cw / 2, dq_y + 27, kind, "m", "middle")
        g.text(x + cw / 2, dq_y + 44, what, "s mu", "middle")
    snap_end = c0 + 5 * (cw + 6) - 6
    later = snap_end + 12
    g.rect(later, dq_y + 8, cw, 44, "b-n", rx=4, dash=True)
    g.text(later + cw / 2, dq_y + 27, "Ready::Callback", "m", "middle")
    g.text(later + cw / 2, dq_y + 44, "call_soon, now", "s mu", "middle")
    # The snapshot bracket under the first five.
    yb = dq_y + dq_h + 6
    g.path(f"M{c0},{yb} L{c0},{yb + 6} L{snap_end},{yb + 6} L{snap_end},{yb}", "q", arrow=False)
    g.text(c0, yb + 22, "the snapshot: step 6 runs the n = ready.len() entries queued when it "
           "began, plus the task steps their I/O callbacks wake", "s")
    g.text(later + cw, yb + 38, "queued while step 6 runs: the next iteration", "s mu", "end")

    # The front feeds step 6.
    x6, y6 = centres[5]
    g.arrow(60, dq_y, 60, y6 + bh / 2 + 2, "q", width=2.2)
    g.text(66, 420, "pop_front", "m mu")

    g.text(24, 626, "A task woken by an I/O callback is the one exception to push_back: its "
           "step goes right behind that callback and runs in the same pass.", "s mu")
    return g, (
        "One iteration of the evloop event loop",
        "The six steps of EventLoop::iterate drawn as a cycle: 1 flush_interest, "
        "2 choose_timeout, 3 wait, 4 dispatch_io, 5 expire_timers, 6 run_ready. The timer heap "
        "gives step 2 its next deadline and step 5 its due timers. Other threads post to the "
        "remote queue and write the waker fd; the kernel reports ready fds to step 3. Step 4 "
        "pushes Ready::Io, Ready::Remote and Ready::Step entries, step 5 Ready::Timer "
        "entries, and callbacks on the loop's thread push Ready::Callback (call_soon) and "
        "Ready::Step (Inner::wake), all at the back of the ready deque. Step 6 pops from the "
        "front exactly the entries queued when it began; entries queued during it wait for "
        "the next iteration.",
    )


# ---------------------------------------------------------------------------------------------
# task-step.svg: one task's steps, its Pending and its wake-up, iteration by iteration

PHASE_BOX = {"Queued": "b-q", "Running": "b-step", "Waiting": "b-n", "Done": "b-io"}


def task_step():
    rows = [
        ("before the loop runs", [
            ("spawn", ["spawn(fut): the task's cell takes a slot in the loop's slab,",
                       "and its first step is queued: a task never runs synchronously"],
             [("Ready::Step", "b-task")], [("Queued", 1)]),
        ]),
        ("iteration 1", [
            ("2 choose_timeout", ["0: callbacks are ready"],
             [("Ready::Step", "b-task")], [("Queued", 1)]),
            ("6 run_ready", ["Runnable::run: poll(fut), the task's Waker in the Context;",
                             "sleep arms a timer (call_at) whose callback holds a",
                             "clone of that Waker; poll returns Poll::Pending,",
                             "and the task is on no queue at all"],
             [], [("Running", 0.3), ("Waiting", 0.7)]),
        ]),
        ("iteration 2", [
            ("2 choose_timeout", ["deadline − now: the timer is next"], [], [("Waiting", 1)]),
            ("3 wait", ["Selector::select sleeps until the deadline"], [], [("Waiting", 1)]),
            ("5 expire_timers", ["the timer is due: its callback is queued"],
             [("Ready::Timer", "b-tm")], [("Waiting", 1)]),
            ("6 run_ready", ["the timer's callback: Waker::wake → Inner::wake →",
                             "try_queue: Waiting → Queued;",
                             "push_back(Ready::Step): it runs in the next iteration",
                             "(the snapshot rule)"],
             [("Ready::Step", "b-task")], [("Waiting", 0.3), ("Queued", 0.7)]),
        ]),
        ("iteration 3", [
            ("2 choose_timeout", ["0: callbacks are ready"],
             [("Ready::Step", "b-task")], [("Queued", 1)]),
            ("6 run_ready", ["Runnable::run: poll(fut) returns Poll::Ready(v): keep v,",
                             "drop the future, leave the slab, wake whoever awaits",
                             "the Task"],
             [], [("Running", 0.3), ("Done", 0.7)]),
        ]),
    ]
    band_h, line_h = 26, 17
    height = 118
    for _, band in rows:
        height += band_h + sum(max(30, 12 + line_h * len(r[1])) for r in band)
    height += 70
    g = Svg(900, height)
    g.text(24, 34, "A task across iterations: step, Pending, wake, step", "t")
    g.text(24, 56, "spawn(async { sleep(Duration::from_millis(10)).await; … })", "m")
    g.text(24, 74, "on a loop with nothing else to do. Phase is the task's state "
           "(src/task/core.rs); time runs downwards", "mu")
    c_step, c_what, c_dq, c_ph = 28, 196, 632, 786
    y = 102
    for x, label in [(c_step, "iteration, step"), (c_what, "what happens"),
                     (c_dq, "ready deque, after"), (c_ph, "Phase")]:
        g.text(x, y, label, "h mu")
    y += 10
    segs = []
    for band_name, band in rows:
        g.rect(16, y, 868, band_h, "b-band", rx=4)
        g.text(c_step, y + 18, band_name, "h")
        if segs:
            # The phase goes on between iterations.
            segs.append((segs[-1][0], y, y + band_h))
        y += band_h
        for step, what, deque, phases in band:
            h = max(30, 12 + line_h * len(what))
            g.text(c_step, y + 20, step, "m h")
            g.lines(c_what, y + 20, what)
            if deque:
                for i, (kind, cls) in enumerate(deque):
                    g.rect(c_dq, y + 6 + i * 24, 124, 22, cls, rx=4)
                    g.text(c_dq + 62, y + 21 + i * 24, kind, "m", "middle")
            else:
                g.text(c_dq + 62, y + 20, "(empty)", "s mu", "middle")
            py = y
            for phase, frac in phases:
                segs.append((phase, py, py + h * frac))
                py += h * frac
            y += h
    # The phase bar: one box per stretch of the same phase, named where it begins.
    merged = []
    for phase, y0, y1 in segs:
        if merged and merged[-1][0] == phase:
            merged[-1][2] = y1
        else:
            merged.append([phase, y0, y1])
    for phase, y0, y1 in merged:
        g.parts.append(
            f'<rect x="{c_ph - 20}" y="{y0:g}" width="14" height="{y1 - y0:g}" rx="3" '
            f'class="{PHASE_BOX[phase]}" stroke-width="1.5"/>'
        )
        g.text(c_ph, y0 + 14, phase, "m h")
    y += 22
    g.lines(24, y, [
        "Steps that do nothing for this task are left out. A wake while a step is already queued "
        "is coalesced: try_queue says no",
        "and nothing is pushed, so N wakes before a step give one step. A task woken by an I/O "
        "callback does not wait for the next",
        "iteration: its step runs right behind that callback, in the same pass.",
    ], "s mu")
    return g, (
        "A task's step, Pending and wake-up across iterations",
        "A table over time, from before the loop runs to iteration 3, for a task that sleeps "
        "10 ms. spawn queues its first step (Ready::Step, Phase Queued). In iteration 1, step 6 "
        "runs it: Runnable::run polls the future, which arms a timer whose callback holds a "
        "clone of the task's Waker, and returns Poll::Pending (Phase Waiting). In iteration 2, "
        "step 3 sleeps until the deadline, step 5 queues the timer's callback, and step 6 runs "
        "it: Waker::wake, Inner::wake and try_queue move the task to Queued and push "
        "Ready::Step. In iteration 3, step 6 polls the future again; it returns "
        "Poll::Ready and the task is Done.",
    )


# ---------------------------------------------------------------------------------------------
# io-sequence.svg: a socket read that has to wait, task -> loop -> selector -> kernel and back


def io_sequence():
    g = Svg(900, 0)
    g.text(24, 34, "A socket read that waits: try, WouldBlock, wait for readiness, try again", "t")
    g.text(24, 54, "TcpStream::read → Socket::poll_recv → Async::poll_read_op (src/net/); "
           "time runs downwards; epoll shown, every backend the same", "mu")
    lanes = {"task": 120, "loop": 370, "sel": 590, "kern": 790}
    heads = [
        ("task", "the task", "TcpStream::read", "b-task"),
        ("loop", "the event loop", "EventLoop, Registry", "b-step"),
        ("sel", "the selector", "Selector (epoll)", "b-n"),
        ("kern", "the kernel", "the socket's fd", "b-io"),
    ]
    top = 76
    for key, name, sub, cls in heads:
        x = lanes[key]
        g.rect(x - 88, top, 176, 46, cls)
        g.text(x, top + 19, name, "h", "middle")
        g.text(x, top + 36, sub, "m", "middle")

    def msg(a, b, y, label, kind="n", reply=False, label_x=None):
        """An arrow from lane a to lane b, its label above it; returns the arrow's y, which is
        y plus room for the label."""
        rows = label if isinstance(label, list) else [label]
        y += 10 + 16 * len(rows)
        xa, xb = lanes[a], lanes[b]
        d = 1 if xb > xa else -1
        g.arrow(xa + 4 * d, y, xb - 6 * d, y, kind, dash=reply)
        lx = (xa + xb) / 2 if label_x is None else label_x
        g.lines(lx, y - 6 - 16 * (len(rows) - 1), rows, "m", "middle")
        return y

    def note(key, y, rows, cls, dx=0):
        """A note on lane key, starting below y; returns its bottom."""
        y += 12
        h = 10 + 16 * len(rows)
        w = max(len(r) for r in rows) * 7.3 + 18
        x = lanes[key] - w / 2 + dx
        g.rect(x, y, w, h, cls, rx=4)
        g.lines(x + 9, y + 17, rows, "m")
        return y + h

    def band(y, label):
        y += 18
        g.path(f"M16,{y} L884,{y}", "n", arrow=False, dash=True, width=1)
        w = len(label) * 7.6 + 12
        g.parts.append(f'<rect x="16" y="{y + 4}" width="{w:g}" height="20" class="bg"/>')
        g.text(22, y + 19, label, "h mu")
        return y + 24

    y = band(top + 46, "iteration N, step 6: the task's step runs")
    y = msg("task", "kern", y, "recv(fd, buf)", "task", label_x=250)
    y = msg("kern", "task", y, "EAGAIN: WouldBlock", "io", reply=True, label_x=250)
    y = note("task", y, ["State::drained: no recv", "until a newer report"], "b-task", dx=12)
    y = msg("task", "loop", y, ["Readiness, first poll: the State", "is the fd's reader (Watch)"],
            "task")
    y = msg("loop", "sel", y, ["a new fd, at once:", "Selector::register(fd)"], "step")
    g.arrow(lanes["sel"] + 4, y, lanes["kern"] - 6, y, "n")
    g.text((lanes["sel"] + lanes["kern"]) / 2, y - 6, "epoll_ctl(ADD)", "m", "middle")
    y = note("task", y, ["park (id, the task's Key)", "as the read side's waiter;",
                         "Poll::Pending: Waiting"], "b-task", dx=12)
    y = band(y, "iteration N+1")
    y = note("loop", y, ["2 choose_timeout: block"], "b-step")
    y = msg("loop", "sel", y, ["3 wait:", "Selector::select(None)"], "step")
    g.arrow(lanes["sel"] + 4, y, lanes["kern"] - 6, y, "n")
    g.text((lanes["sel"] + lanes["kern"]) / 2, y - 6, "epoll_wait", "m", "middle")
    y = note("kern", y, ["… sleeps until", "the peer's bytes", "arrive"], "b-io")
    y = msg("kern", "sel", y, "[fd R]", "io", reply=True)
    g.arrow(lanes["sel"] - 4, y, lanes["loop"] + 6, y, "io", dash=True)
    g.text((lanes["sel"] + lanes["loop"]) / 2, y - 6, "the event", "m", "middle")
    y = note("loop", y, ["4 dispatch_io: push_back", "Ready::Io (the State, reader)"], "b-step")
    y = note("loop", y, ["6 run_ready: Watch::run →", "State::fire → wake the waiter",
                         "→ Inner::wake: its Ready::Step", "goes right behind, same pass"],
             "b-step")
    y = msg("loop", "task", y, ["the task's step: Readiness is", "Ready; try the op again"],
            "step")
    y = msg("task", "kern", y, "recv(fd, buf)", "task", label_x=250)
    y = msg("kern", "task", y, "Ok(n): the bytes", "io", reply=True, label_x=250)
    bottom = y + 18
    lifelines = [
        f'<path d="M{x},{top + 46} L{x},{bottom}" class="l-n" fill="none" stroke-width="1" '
        f'stroke-dasharray="6,4"/>'
        for x in lanes.values()
    ]
    g.parts[0:0] = lifelines
    g.lines(24, bottom + 24, [
        "Try first: when the bytes are already there, a read is one recv and no wait at all. "
        "The reader stays registered while",
        "tasks wait and across wake-ups, so the next WouldBlock parks again with no epoll_ctl: "
        "no interest change per read.",
    ], "s mu")
    g.h = int(bottom + 60)
    return g, (
        "The sequence of a socket read that has to wait",
        "A sequence diagram with four lifelines: the task, the event loop, the selector and the "
        "kernel. In iteration N the task's step calls recv, which fails with EAGAIN "
        "(WouldBlock); State::drained records it. The first poll of the Readiness future "
        "registers the socket's State itself as the fd's reader (a Watch object, no closure); "
        "the registry registers the new fd with the selector at once (epoll_ctl ADD). The "
        "task's key is parked as the read side's waiter, kept inline in the State, and the "
        "poll returns Poll::Pending. In iteration N+1 step 2 chooses to block, step 3 calls "
        "Selector::select, which sleeps in epoll_wait until the peer's bytes arrive and the fd "
        "is reported readable. Step 4 queues the fd's reader, the State; step 6 runs it: "
        "State::fire wakes the waiter and Inner::wake puts the task's step right behind it in "
        "the same pass. The task's step tries recv again and gets the bytes.",
    )


# ---------------------------------------------------------------------------------------------
# microtasks.svg: JavaScript's two queues against evloop's one FIFO, on one timeline


def microtasks():
    g = Svg(900, 700)
    g.text(24, 34, "Microtasks against one FIFO: the same puzzle on one timeline", "t")
    g.text(24, 58, "JavaScript", "h")
    g.text(120, 58, "log(1); setTimeout(() => log(2), 0); "
           "Promise.resolve().then(() => log(3)); log(4);", "m")
    g.text(24, 78, "evloop", "h")
    g.text(120, 78, "log(1); lp.call_later(Duration::ZERO, |_| log(2)); "
           "p.add_done_callback(|_| log(3));", "m")
    g.text(120, 95, "p.set_result(()); log(4);", "m")
    g.arrow(160, 118, 868, 118, "n")
    g.text(868, 112, "time", "s mu", "end")

    def block(x, y, w, h, cls, title, rows=(), dash=False):
        g.rect(x, y, w, h, cls, dash=dash)
        g.text(x + w / 2, y + 18, title, "s h", "middle")
        g.lines(x + w / 2, y + 36, list(rows), "s", "middle", step=15)

    def chip(x, y, label, cls, w=None):
        w = w or len(label) * 7.3 + 16
        g.rect(x, y, w, 22, cls, rx=11)
        g.text(x + w / 2, y + 15, label, "m", "middle")
        return x + w + 6

    def lane_label(y, name, rows):
        g.text(24, y, name, "h")
        g.lines(24, y + 18, rows, "s mu", step=15)

    # JavaScript.
    y = 136
    lane_label(y + 18, "JavaScript", ["two queues:", "macrotasks", "(task queue),", "microtasks"])
    block(160, y, 178, 112, "b-tm", "macrotask: the script",
          ["setTimeout → task queue", "then → microtask queue"])
    x = chip(190, y + 76, "log 1", "b-n")
    chip(x + 8, y + 76, "log 4", "b-n")
    block(346, y, 184, 112, "b-th", "microtasks: drain them all",
          ["and every microtask", "they queue meanwhile"])
    chip(408, y + 76, "log 3", "b-n")
    block(538, y, 118, 112, "b-io", "render (browser)",
          ["I/O arrives as", "macrotasks, after", "the microtasks"])
    block(664, y, 124, 112, "b-tm", "macrotask: timer")
    chip(699, y + 76, "log 2", "b-n")
    g.lines(800, y + 40, ["prints", "1 4 3 2"], "h", step=18)

    # evloop.
    y = 268
    lane_label(y + 18, "evloop", ["one queue:", "the ready", "deque, FIFO"])
    block(160, y, 178, 124, "b-step", "iteration k, step 6",
          ["call_later(0) → timer heap", "set_result → call_soon", "(the done-callback)"])
    x = chip(190, y + 88, "log 1", "b-n")
    chip(x + 8, y + 88, "log 4", "b-n")
    block(346, y, 184, 124, "b-io", "iteration k+1, steps 1–4",
          ["poll for I/O first", "(timeout 0: the deque", "is not empty)"])
    block(538, y, 118, 124, "b-tm", "5 expire_timers", ["the timer goes", "behind the", "done-callback"])
    block(664, y, 124, 124, "b-step", "6 run_ready", ["in FIFO order"])
    chip(679, y + 58, "log 3", "b-q", 94)
    chip(679, y + 88, "log 2", "b-q", 94)
    g.lines(800, y + 46, ["prints", "1 4 3 2"], "h", step=18)

    # A chain of promise hops.
    y = 424
    g.path(f"M16,{y} L884,{y}", "n", arrow=False, dash=True, width=1)
    g.text(24, y + 26, "A chain of three promise hops, each completing the next promise", "h")
    y += 44
    lane_label(y + 15, "JavaScript", [])
    x = 160
    for label, cls in [("macrotask", "b-tm"), ("hop 1", "b-th"), ("hop 2", "b-th"),
                       ("hop 3", "b-th"), ("I/O macrotask", "b-io")]:
        x = chip(x, y, label, cls, 112 if label.startswith("I/O") else 96)
    g.text(x + 6, y + 15, "the whole chain before I/O", "s mu")
    y += 44
    lane_label(y + 15, "evloop", [])
    x = 160
    for i in range(3):
        x = chip(x, y, f"hop {i + 1}", "b-q", 62)
        x = chip(x, y, "poll", "b-io", 52)
        x += 10
    g.text(x, y + 15, "one hop per iteration", "s mu")
    g.lines(160, y + 48, ["hop 1 in step 6, a poll in steps 1–4 of the next iteration, then hop 2 "
                          "in its step 6, and so on"], "s mu")
    y += 92
    g.lines(24, y, [
        "JavaScript drains every microtask before it looks at I/O again, so a chain that keeps "
        "re-queueing itself freezes the page.",
        "evloop's done-callbacks and task steps are plain entries of the one ready deque: N hops "
        "cost N iterations (N polls with",
        "timeout 0), and by the snapshot rule nothing can starve I/O or timers. asyncio made the "
        "same choice.",
    ], "s")
    g.h = y + 62
    return g, (
        "JavaScript microtasks against evloop's single FIFO ready deque",
        "The puzzle log 1, a zero-delay timer logging 2, a promise reaction logging 3, log 4 on "
        "one timeline. JavaScript runs the script as a macrotask (1, 4), drains the microtask "
        "queue (3), renders and polls I/O, then runs the timer macrotask (2). evloop runs the "
        "same code in step 6 of iteration k (1, 4): call_later puts the timer in the heap and "
        "set_result hands the done-callback to call_soon. Iteration k+1 polls for I/O first, "
        "step 5 queues the timer behind the done-callback, and step 6 runs both in FIFO order "
        "(3, 2). Both print 1 4 3 2. Below, a chain of three promise hops: JavaScript runs the "
        "whole chain before I/O, evloop runs one hop per iteration with a poll between.",
    )


# ---------------------------------------------------------------------------------------------
# timer-slots.svg: where a timer lives: a heap entry, a slot, its closure in its type's store


def timer_slots():
    g = Svg(900, 560)
    g.text(24, 34, "Where a timer lives: a heap entry, a slot, a closure in its type's store", "t")
    g.text(24, 58, "let h = lp.call_later(Duration::from_millis(20), move |_| log(id));", "m")
    g.text(24, 76, "src/reactor/timers.rs (the heap), src/reactor/timer_slots.rs (slots and "
           "stores), src/reactor/handle.rs (TimerHandle)", "mu")

    # The heap: a root and its four children, 16-byte entries.
    hx, hy = 24, 100
    g.rect(hx, hy, 250, 250, "b-tm")
    g.text(hx + 12, hy + 22, "timer heap: QuadHeap", "h")
    g.text(hx + 12, hy + 40, "4-ary, 16-byte entries", "s mu")
    g.text(hx + 12, hy + 56, "[deadline | seq << 32 | slot]", "m")
    root = (hx + 70, hy + 76, 110, 28)
    g.rect(*root, "b-n", rx=4)
    g.text(root[0] + 55, root[1] + 18, "5 ms | 12, s0", "m", "middle")
    # Its four children side by side: 64 contiguous bytes.
    kids = [("9 ms", "14, s5"), ("20 ms", "17, s3"), ("31 ms", "13, s1"), ("40 ms", "15, s2")]
    kid_boxes = []
    for i, (dl, rest) in enumerate(kids):
        x, y = hx + 10 + i * 58, hy + 150
        g.path(f"M{root[0] + 55:g},{root[1] + 28:g} L{x + 26:g},{y:g}", "n", arrow=False, width=1)
        g.rect(x, y, 52, 40, "b-tm" if i == 1 else "b-n", rx=4)
        g.lines(x + 26, y + 17, [dl, rest], "m", "middle", step=15)
        kid_boxes.append((x, y))
    g.text(hx + 12, hy + 212, "four children: 64 contiguous bytes", "s mu")
    g.text(hx + 12, hy + 230, "ordering reads nothing else", "s mu")

    # The slot table.
    tx, ty, tw = 300, 100, 330
    g.rect(tx, ty, tw, 250, "b-step")
    g.text(tx + 12, ty + 22, "slot table (one per loop)", "h")
    g.text(tx + 12, ty + 40, "state · store, index · handle? · held: 8 bytes", "s mu")
    rows = [
        ("s0", "Scheduled · 0, 2 · held", "b-n"),
        ("s1", "Cancelled · 1, 4 · handle · held", "b-n"),
        ("s2", "Scheduled · 0, 0 · handle · held", "b-n"),
        ("s3", "Scheduled · 1, 7 · handle · held", "b-tm"),
        ("s4", "Done · 1, 3 · handle (kept, cloned)", "b-n"),
        ("s5", "Scheduled · 0, 1 · held", "b-n"),
        ("s6", "free", "b-n"),
    ]
    row_y = {}
    for i, (name, what, cls) in enumerate(rows):
        y = ty + 52 + i * 27
        g.rect(tx + 10, y, tw - 20, 23, cls, rx=3)
        g.text(tx + 18, y + 16, name, "m")
        g.text(tx + 48, y + 16, what, "s")
        row_y[name] = y
    kx, ky = kid_boxes[1]
    g.path(f"M{kx + 26:g},{ky + 40:g} L{kx + 26:g},{ky + 48:g} L{hx + 262:g},{ky + 48:g} "
           f"L{hx + 262:g},{row_y['s3'] + 12:g} L{tx + 10:g},{row_y['s3'] + 12:g}", "tm")

    # The closure stores.
    sx, sy, sw = 656, 100, 220
    g.rect(sx, sy, sw, 250, "b-th")
    g.text(sx + 12, sy + 22, "closure stores", "h")
    g.text(sx + 12, sy + 40, "one Vec<Option<F>> per closure type", "s mu")
    for k, (title, cells, hot) in enumerate([
        ("store 0: F0 (sleep's)", ["f", "f", "f", "·"], None),
        ("store 1: F1 (main.rs:12)", ["·", "·", "·", "·", "·", "·", "·", "f"], 7),
    ]):
        y = sy + 62 + k * 100
        g.text(sx + 12, y, title, "s h")
        for i, c in enumerate(cells):
            x = sx + 12 + i * 25
            g.rect(x, y + 8, 22, 26, "b-tm" if i == hot else "b-n", rx=3)
            g.text(x + 11, y + 26, c, "m", "middle")
            if k == 1:
                g.text(x + 11, y + 48, str(i), "s mu", "middle")
    g.text(sx + 12, sy + 232, "f: Some(closure), inline; ·: free", "s mu")
    cx7 = sx + 12 + 7 * 25 + 11
    g.path(f"M{tx + tw - 10:g},{row_y['s3'] + 12:g} L{cx7:g},{row_y['s3'] + 12:g} "
           f"L{cx7:g},{sy + 62 + 100 + 8:g}", "th")

    # Who else names slot 3.
    by = 376
    g.rect(300, by, 200, 44, "b-n", rx=4)
    g.text(400, by + 19, "h: TimerHandle", "m", "middle")
    g.text(400, by + 36, "{ slot: 3, key }", "m", "middle")
    g.arrow(400, by, 400, row_y["s6"] + 25, "n", dash=True)
    g.rect(515, by, 120, 44, "b-q", rx=4)
    g.text(575, by + 19, "Ready::Timer", "m", "middle")
    g.text(575, by + 36, "(slot 3; at 1, 7)", "s", "middle")
    g.arrow(575, by, 575, row_y["s6"] + 25, "q", dash=True)

    g.lines(24, 452, [
        "call_later: the closure goes into a free place of its store, the timer into a free slot, "
        "an entry onto the heap; no allocation once the",
        "vectors have grown. Step 5 pops the entry, marks the slot Queued and queues "
        "Ready::Timer(slot, place). Step 6 takes the closure out and",
        "calls it, with no borrow held; the slot says Done. cancel() marks the slot Cancelled and "
        "drops the closure; the heap skips the entry.",
        "A slot is reused only when no handle names it and neither the heap nor the deque does: "
        "a kept handle keeps answering is_done().",
    ], "s")
    g.h = 536
    return g, (
        "Where a timer lives in evloop",
        "A timer scheduled with call_later is three things. In the 4-ary timer heap, a 16-byte "
        "entry holds its deadline, a sequence number and its slot number, so ordering never "
        "reads anything else. In the slot table, its slot holds its state (Scheduled, Queued, "
        "Done or Cancelled), which closure store and index hold its closure, whether a "
        "TimerHandle names it (clones past the first are counted in a side table) and whether "
        "the heap or the deque still does, in 8 bytes; where it was scheduled is its closure "
        "store's. Its closure sits inline in the store of its closure type, a vector of "
        "options. The TimerHandle and, after step 5, the ready deque's Ready::Timer entry name "
        "the slot; the entry also carries where the closure is, so that running it loads the "
        "slot and the closure at once. Step 6 takes the closure out of its store and calls it. A slot is reused only "
        "when nothing names it.",
    )


def socket_state():
    g = Svg(900, 482)
    g.text(24, 34, "What an echo round trip reads of a socket's state, cache line by cache line", "t")
    g.text(24, 58, "src/net/async_fd.rs: State, Flags, Cold (x86-64; the allocation is Rc's two "
           "counts, then the state)", "mu")
    x0, px = 80, 2.0  # bytes 0..384 of the allocation, two pixels per byte

    def strip(y, title, fields, note):
        g.text(24, y - 12, title, "h")
        for line in range(6):
            x = x0 + line * 64 * px
            g.rect(x, y, 64 * px, 58, "b-band", rx=0)
            g.text(x + 4, y + 72, f"line {line}", "s mu")
        for start, end, label, hot in fields:
            x, w = x0 + start * px, (end - start) * px
            g.rect(x, y + 6, w, 46, "b-tm" if hot else "b-n", rx=2)
            if label:
                g.text(x + w / 2, y + 33, label, "s", "middle")
        for line in range(7):
            x = x0 + line * 64 * px
            g.path(f"M{x:g},{y - 4:g} L{x:g},{y + 62:g}", "n", arrow=False, dash=True, width=1)
        g.lines(24, y + 96, note, "s")

    before = [
        (0, 16, "Rc", True),
        (16, 48, "spare", False),
        (48, 120, "read waiters", True),
        (120, 160, "read slot", True),
        (160, 176, "flags", True),
        (176, 208, "spare", False),
        (208, 280, "write waiters", False),
        (280, 320, "write slot", False),
        (320, 336, "flags", True),
        (336, 352, "loop", False),
        (352, 368, "ids", True),
        (368, 376, "", False),
    ]
    after = [
        (0, 16, "Rc", True),
        (16, 32, "", True),
        (32, 56, "", True),
        (56, 128, "read waiters", True),
        (128, 208, "write waiters", False),
        (208, 224, "loop", False),
        (224, 296, "read slot, spare", False),
        (296, 368, "write slot, spare", False),
    ]
    strip(104, "Left to the compiler (round seven): the fields a round trip reads lie in four lines",
          before, ["Each side was one struct: its spare list, waiters, poll slot and flags; the "
                   "loop, its id, the next waiter id and the fd came last."])
    strip(244, "repr(C), a round trip's fields first (round eight): two lines",
          after, ["Bytes 16 to 56: the fd, the Flags of both sides, the loop's id, the next waiter "
                  "id, when the read side was found drained.",
                  "The poll slots and spare lists (Cold) go last."])
    g.rect(x0, 384, 30, 18, "b-tm", rx=2)
    g.text(x0 + 40, 398, "read by every round trip (the report's Rc clone, the reader callback, "
           "the read and the write)", "s")
    g.rect(x0, 410, 30, 18, "b-n", rx=2)
    g.text(x0 + 40, 424, "read only off the common path (a writer that waits, a poll-based "
           "caller, several waiters)", "s")
    g.text(24, 456, "Echo at 1,000 connections: 10.7 simulated L1 read misses per round trip "
           "before, 8.75 after (docs/16-performance.md).", "s")
    g.h = 474
    return g, (
        "What an echo round trip reads of a socket's state",
        "Two strips show the bytes of the allocation that holds a socket's state, 384 bytes in "
        "six cache lines of 64 bytes, with the fields an echo round trip reads highlighted. Left "
        "to the compiler's field order, each direction was one piece (spare list, waiters, poll "
        "slot, flags) and the loop's id and next waiter id came last, so a round trip read four "
        "lines: the reference counts and the read waiters, the read slot, the flags, and the "
        "write flags with the ids. With repr(C) and the hot fields first, the reference counts, "
        "the fd, the flags of both sides, the ids, the read side's drained-at and its waiters "
        "fill the first two lines, and the write waiters, the loop, and the poll slots and spare "
        "lists follow. The simulated L1 read misses per round trip at 1,000 connections went "
        "from 10.7 to 8.75.",
    )


PICTURES = {
    "iteration.svg": iteration,
    "task-step.svg": task_step,
    "io-sequence.svg": io_sequence,
    "microtasks.svg": microtasks,
    "timer-slots.svg": timer_slots,
    "socket-state.svg": socket_state,
}


def main(argv):
    dark_dir = None
    if len(argv) == 3 and argv[1] == "--dark":
        dark_dir = argv[2]
        os.makedirs(dark_dir, exist_ok=True)
    elif len(argv) != 1:
        sys.exit(__doc__)
    for name, draw in PICTURES.items():
        g, (title, desc) = draw()
        with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
            f.write(g.render(title, desc))
        if dark_dir:
            dark = os.path.join(dark_dir, name.replace(".svg", "-dark.svg"))
            with open(dark, "w", encoding="utf-8") as f:
                f.write(g.render(title, desc, dark_always=True))
        print(f"wrote docs/img/{name}")


if __name__ == "__main__":
    main(sys.argv)
