"""The background runners: the periodic purges, and tasks keeping their own time."""

from __future__ import annotations

import asyncio

from api_shared.background import BackgroundTask, Periodic


async def test_a_periodic_job_runs_at_start_survives_failures_and_stops_on_request() -> None:
    runs: list[int] = []
    second_run = asyncio.Event()

    async def job() -> int:
        runs.append(len(runs))
        if len(runs) == 1:
            raise RuntimeError("the database is down")
        second_run.set()
        return len(runs)

    periodic = Periodic("test", job, interval_s=0)
    await periodic.start()
    await second_run.wait()
    await periodic.stop()

    assert runs[:2] == [0, 1]
    assert not periodic.running
    await periodic.stop()  # stopping twice is harmless


async def test_a_job_with_a_long_interval_runs_once_until_stopped() -> None:
    ran = asyncio.Event()

    async def job() -> None:
        ran.set()

    periodic = Periodic("test", job, interval_s=3600)
    await periodic.start()
    await ran.wait()

    assert periodic.running
    await periodic.stop()
    assert not periodic.running


async def test_a_background_task_runs_until_stopped_and_one_that_failed_stops_quietly() -> None:
    started = asyncio.Event()

    async def forever() -> None:
        started.set()
        await asyncio.Event().wait()

    async def failing() -> None:
        raise RuntimeError("users-service is gone")

    task, failed = BackgroundTask("forever", forever), BackgroundTask("failing", failing)
    await task.start()
    await failed.start()
    await started.wait()
    await asyncio.sleep(0)  # the failing one has run and ended

    assert task.running
    assert not failed.running
    await task.stop()
    await failed.stop()  # its error is the task's, not the stopping server's
    assert not task.running
