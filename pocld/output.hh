// output.hh - kernel printf output, forwarded to the clients as OUTPUT.
#pragma once

#include <mutex>
#include <string>

namespace pocld {

// Points this process's standard output at a pipe and starts the thread
// that collects what native runtimes write there (OpenCL C printf).  On
// failure (logged) standard output stays as it was and nothing is
// forwarded.
void start_output_capture();

// Moves the output collected so far into `out`; false when there is none.
// drain: first read what the pipe holds right now, so that a kernel's output,
// written before its command completed, goes with that command's completion.
// With output, `order` holds a lock until the caller has sent it: two
// completions on two threads must not send their parts out of the pipe's
// order (a kernel that waits for another may end, and report, first).
bool take_output(std::string &out, bool drain,
                 std::unique_lock<std::mutex> &order);

} // namespace pocld
