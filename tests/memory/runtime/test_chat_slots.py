"""The chat's turn workers hand out their places earliest due first: a message's store-and-recall
before the stores of replies already streamed, a store put off by at most STORE_DEFER_S."""

from __future__ import annotations

import asyncio

from memory.runtime.chat import TurnSlots


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def _order_of_waiters(slots: TurnSlots, clock: Clock, waiters: list[tuple[str, bool, float]]) -> list[str]:
    """Hold the only place, queue `waiters` (name, store, clock when it comes), then free it; the
    order the waiters got the place in."""
    order: list[str] = []
    async with slots.place(store=False):
        tasks = []
        for name, store, at in waiters:
            clock.now = at

            async def wait(name=name, store=store) -> None:
                async with slots.place(store=store):
                    order.append(name)
                    await asyncio.sleep(0)

            tasks.append(asyncio.create_task(wait()))
            await asyncio.sleep(0)  # queued in this order
        assert order == []  # all wait while the place is held
    await asyncio.gather(*tasks)
    return order


async def test_a_message_that_comes_within_the_defer_goes_before_an_earlier_reply_store():
    clock = Clock()
    slots = TurnSlots(1, store_defer_s=2.0, clock=clock)
    order = await _order_of_waiters(slots, clock, [("store", True, 100.0), ("message", False, 101.0)])
    assert order == ["message", "store"]


async def test_a_reply_store_waits_no_longer_than_the_defer():
    clock = Clock()
    slots = TurnSlots(1, store_defer_s=2.0, clock=clock)
    # The store is due at 102.0; a message that came at 102.5 goes after it, one at 101.5 before.
    order = await _order_of_waiters(slots, clock, [("store", True, 100.0), ("late message", False, 102.5),
                                                   ("message", False, 101.5)])
    assert order == ["message", "store", "late message"]


async def test_without_a_defer_the_places_go_in_the_order_asked():
    clock = Clock()
    slots = TurnSlots(1, store_defer_s=0.0, clock=clock)
    order = await _order_of_waiters(slots, clock, [("store", True, 100.0), ("message", False, 100.0),
                                                   ("store 2", True, 100.0)])
    assert order == ["store", "message", "store 2"]


async def test_a_cancelled_waiter_gives_its_place_on():
    slots = TurnSlots(1, store_defer_s=0.0)
    async with slots.place(store=False):
        async def hold() -> None:
            async with slots.place(store=False):
                await asyncio.sleep(0)

        cancelled = asyncio.create_task(hold())
        await asyncio.sleep(0)
        cancelled.cancel()
        later = asyncio.create_task(hold())
        await asyncio.sleep(0)
    await asyncio.wait_for(later, timeout=5)
    assert cancelled.cancelled()
    assert slots.free == 1  # every place came back


async def test_as_many_run_at_once_as_there_are_places():
    slots = TurnSlots(2, store_defer_s=1.0)
    running, most = 0, 0

    async def turn() -> None:
        nonlocal running, most
        async with slots.place(store=False):
            running += 1
            most = max(most, running)
            await asyncio.sleep(0.01)
            running -= 1

    await asyncio.gather(*(turn() for _ in range(6)))
    assert most == 2 and slots.free == 2
