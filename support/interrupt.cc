// Cleanup on SIGINT/SIGTERM/SIGHUP (interrupt.h).
#include "support/interrupt.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace stitch::support {
namespace {

constexpr size_t kMaxPath = 4096;
constexpr int kMaxChildren = 64;

char cleanup_paths[kCleanupDirectories][kMaxPath];
std::atomic<bool> cleanup_set[kCleanupDirectories];
std::atomic<pid_t> child_groups[kMaxChildren];
char created_paths[kMaxCreatedDirectories][kMaxPath];
std::atomic<int> created_count{0};

struct LinuxDirent64 {
  ino64_t d_ino;
  off64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

// Removes `name` under `parent` (a directory tree or a file) without following
// symbolic links. Recursion depth is the depth of stitchopt's own output tree
// (OUT/kernels/emu_build: 3), never something a model decides.
void remove_tree(int parent, const char* name) {
  int directory = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (directory < 0) {
    unlinkat(parent, name, 0);
    return;
  }
  char buffer[4096];
  bool removed_any = true;
  // Entries are unlinked while reading; read again from the start until a full pass
  // finds nothing left to remove.
  while (removed_any) {
    removed_any = false;
    lseek(directory, 0, SEEK_SET);
    for (;;) {
      long count = syscall(SYS_getdents64, directory, buffer, sizeof buffer);
      if (count <= 0) break;
      for (long offset = 0; offset < count;) {
        auto* entry = reinterpret_cast<LinuxDirent64*>(buffer + offset);
        offset += entry->d_reclen;
        if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0) continue;
        if (entry->d_type == DT_DIR) {
          remove_tree(directory, entry->d_name);
        } else {
          unlinkat(directory, entry->d_name, 0);
        }
        removed_any = true;
      }
    }
  }
  close(directory);
  unlinkat(parent, name, AT_REMOVEDIR);
}

void on_interrupt(int signal_number) {
  for (std::atomic<pid_t>& group : child_groups) {
    pid_t value = group.load();
    if (value > 0) kill(-value, SIGKILL);
  }
  for (int slot = 0; slot < kCleanupDirectories; ++slot) {
    if (cleanup_set[slot].load()) remove_tree(AT_FDCWD, cleanup_paths[slot]);
  }
  for (int i = 0, count = created_count.load(); i < count; ++i) rmdir(created_paths[i]);
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  sigaction(signal_number, &action, nullptr);
  raise(signal_number);
}

}  // namespace

void install_interrupt_cleanup() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&action.sa_mask, signal_number);
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) sigaction(signal_number, &action, nullptr);
}

void set_cleanup_directory(int slot, const std::string& absolute_path) {
  if (slot < 0 || slot >= kCleanupDirectories) return;
  cleanup_set[slot].store(false);
  if (absolute_path.empty() || absolute_path.size() >= kMaxPath || absolute_path[0] != '/') return;
  std::memcpy(cleanup_paths[slot], absolute_path.c_str(), absolute_path.size() + 1);
  cleanup_set[slot].store(true);
}

void set_created_directories(const std::vector<std::string>& deepest_first) {
  created_count.store(0);
  int count = 0;
  for (const std::string& path : deepest_first) {
    if (count == kMaxCreatedDirectories) break;
    if (path.empty() || path.size() >= kMaxPath || path[0] != '/') continue;
    std::memcpy(created_paths[count], path.c_str(), path.size() + 1);
    ++count;
  }
  created_count.store(count);
}

void register_child_group(pid_t group) {
  for (std::atomic<pid_t>& slot : child_groups) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, group)) return;
  }
}

void unregister_child_group(pid_t group) {
  for (std::atomic<pid_t>& slot : child_groups) {
    pid_t expected = group;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

}  // namespace stitch::support
