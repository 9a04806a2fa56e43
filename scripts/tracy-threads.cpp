// Lists a Tracy capture's threads: what tracy-csvexport leaves out. Its `thread` column is
// the capture's index of the thread (Tracy's compressed thread id), and this prints, one line
// per thread, that index, the thread's id and the name the client gave it, so that
// scripts/tracy-check.py can tell which named thread ran each zone.
//
// Built by scripts/tracy-capture.sh against the TracyServer library of a tracy-csvexport build
// (Tracy 0.14.0, the version tracy-client 0.18 vendors), with that library's include folders
// (its CMake flags.make) and its zstd and capstone libraries.
//
//   tracy-threads CAPTURE.tracy   →   index,tid,name

#include <cinttypes>
#include <cstdio>
#include <memory>

#include "TracyFileRead.hpp"
#include "TracyWorker.hpp"

int main(int argc, char** argv)
{
    if (argc != 2)
    {
        fprintf(stderr, "usage: tracy-threads CAPTURE.tracy\n");
        return 2;
    }
    std::unique_ptr<tracy::FileRead> file(tracy::FileRead::Open(argv[1]));
    if (!file)
    {
        fprintf(stderr, "tracy-threads: cannot open %s\n", argv[1]);
        return 1;
    }
    tracy::Worker worker(*file);
    printf("index,tid,name\n");
    for (const auto* thread : worker.GetThreadData())
    {
        printf("%u,%" PRIu64 ",%s\n", worker.CompressThread(thread->id), thread->id, worker.GetThreadName(thread->id));
    }
    return 0;
}
