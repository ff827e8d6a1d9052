// A blocking socket stream for Beast's synchronous API that gives up when the
// server stops or a deadline passes: reads wait in short poll() slices so an
// idle keep-alive connection notices shutdown, and a client that stops
// reading cannot pin a connection thread forever.
#pragma once

#include <poll.h>

#include <atomic>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>
#include <chrono>

namespace aph::server {

struct StreamLimits {
  std::chrono::milliseconds idle_read{60000};  // no byte from the client for this long
  std::chrono::milliseconds write{60000};      // the client accepts no byte for this long
};

class TimedStream {
 public:
  using executor_type = boost::asio::ip::tcp::socket::executor_type;

  // `stopping` aborts reads (never writes, so streams can end cleanly);
  // `force_close` aborts everything.
  TimedStream(boost::asio::ip::tcp::socket& socket, const std::atomic<bool>& stopping,
              const std::atomic<bool>& force_close, StreamLimits limits)
      : socket_(socket), stopping_(stopping), force_close_(force_close), limits_(limits) {
    socket_.non_blocking(true);
  }

  executor_type get_executor() { return socket_.get_executor(); }
  int native_handle() { return socket_.native_handle(); }

  template <class MutableBufferSequence>
  size_t read_some(const MutableBufferSequence& buffers, boost::system::error_code& ec) {
    auto deadline = std::chrono::steady_clock::now() + limits_.idle_read;
    for (;;) {
      size_t n = socket_.read_some(buffers, ec);
      if (ec != boost::asio::error::would_block) return n;
      if (stopping_.load() || force_close_.load()) {
        ec = boost::asio::error::operation_aborted;
        return 0;
      }
      if (!wait(POLLIN, deadline, ec)) return 0;
    }
  }

  template <class MutableBufferSequence>
  size_t read_some(const MutableBufferSequence& buffers) {
    boost::system::error_code ec;
    size_t n = read_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }

  template <class ConstBufferSequence>
  size_t write_some(const ConstBufferSequence& buffers, boost::system::error_code& ec) {
    auto deadline = std::chrono::steady_clock::now() + limits_.write;
    for (;;) {
      size_t n = socket_.write_some(buffers, ec);
      if (ec != boost::asio::error::would_block) return n;
      if (force_close_.load()) {
        ec = boost::asio::error::operation_aborted;
        return 0;
      }
      if (!wait(POLLOUT, deadline, ec)) return 0;
    }
  }

  template <class ConstBufferSequence>
  size_t write_some(const ConstBufferSequence& buffers) {
    boost::system::error_code ec;
    size_t n = write_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }

 private:
  // Waits up to 100 ms (so flags are re-checked) or until the deadline.
  bool wait(short events, std::chrono::steady_clock::time_point deadline,
            boost::system::error_code& ec) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      ec = boost::asio::error::timed_out;
      return false;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    pollfd p{socket_.native_handle(), events, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 100)));
    if (rc < 0 && errno != EINTR) {
      ec = boost::system::error_code(errno, boost::system::system_category());
      return false;
    }
    return true;
  }

  boost::asio::ip::tcp::socket& socket_;
  const std::atomic<bool>& stopping_;
  const std::atomic<bool>& force_close_;
  StreamLimits limits_;
};

}  // namespace aph::server
