"""How work runs: the edges call the runtime, the runtime calls the services (plain functions).

- chat.py: a chat turn's phases on the turn and reply workers, turn slots, per-user order.
- connections.py: database connections kept on the few long-lived worker threads.
- background.py: the turns running on an event loop, outliving the socket that started them.
- lane.py: the low-priority lane, which runs the work after replies while none is under way.
- after_reply.py: where that work runs (MAINTENANCE_MODE: inline, the lane, Celery), installed
  as the services' follow-up port (memory/services/follow_up.py) by memory/apps.py.
- tasks.py: the Celery tasks (memoryos_site/celery.py).
- due_work.py: the server's due-work loop and heartbeat, and `manage.py maintenance`'s run.
"""
