#!/usr/bin/env bash
# tools/bench.sh pointcloud under the name tests/remote/test_pointcloud.sh
# (CTest remote/pointcloud) runs it by.
exec "$(dirname "$0")/bench.sh" pointcloud "$@"
