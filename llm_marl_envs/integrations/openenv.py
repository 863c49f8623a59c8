"""Any registered environment as an OpenEnv environment (extra ``integrations``).

`OpenEnv <https://github.com/meta-pytorch/OpenEnv>`_ (distribution ``openenv``; called
``openenv-core`` up to 0.3.0) serves environments
over HTTP and WebSocket so that its clients (TRL, verifiers, ...) can drive them. This module
puts a registered environment behind OpenEnv's own server (``openenv.core.create_app``):

* one environment per WebSocket session (``max_concurrent_envs`` sessions at once), built
  with the ``env_kwargs`` given to the server;
* an action is the text of the agent whose turn it is (:class:`LLMMarlAction`; naming the
  agent is optional, and an action for the wrong agent is refused with nothing changed);
* an observation (:class:`LLMMarlObservation`) carries that agent's prompt as ``text`` and
  chat ``messages``, ``current_agent`` (whose turn it is; ``None`` once the episode is over),
  ``acted`` (whose action produced it), the step's reward of every agent in ``rewards``,
  ``returns`` so far, per-agent ``terminations`` / ``truncations``, the current agent's
  ``info``, and OpenEnv's ``reward`` (the acting agent's reward of the step) and ``done``.

Agents that finish before the others are stepped out by the server (the AEC "dead step"), so
a client only ever sees agents with a move to make.

>>> from llm_marl_envs.integrations.openenv import LLMMarlEnv, serve      # doctest: +SKIP
>>> server = serve("llm_marl_envs/GSM8K-v0", port=0, block=False)      # doctest: +SKIP
>>> with LLMMarlEnv(base_url=server.url).sync() as env:                 # doctest: +SKIP
...     result = env.reset(seed=0)
...     result = env.step("The answer is 42.")

:func:`serve` with ``block=True`` (the default) runs the server until Ctrl-C, like
``uvicorn.run``; :func:`create_app` gives the FastAPI app for any ASGI server. OpenEnv's
stateless HTTP ``/reset`` and ``/step`` endpoints build a fresh environment per request, as
OpenEnv does for every environment: play episodes over the WebSocket session (``/ws``), which
is what OpenEnv's clients (:class:`LLMMarlEnv`, ``GenericEnvClient``) use. A stateless
``POST /step`` therefore has no episode to step: it is answered HTTP 409 with a message naming
the WebSocket route, not a server error.
"""

from __future__ import annotations

import functools
import logging
import socket
import threading
import time
import warnings
from collections.abc import Callable
from importlib import metadata
from typing import Any

import llm_marl_envs
from llm_marl_envs.core.optional import require
from llm_marl_envs.rollout.records import json_safe

_server = require("openenv.core.env_server", "integrations", "the OpenEnv integration")
_server_types = require("openenv.core.env_server.types", "integrations", "the OpenEnv integration")
_client = require("openenv.core.env_client", "integrations", "the OpenEnv integration")
_types = require("openenv.core.client_types", "integrations", "the OpenEnv integration")
_pydantic = require("pydantic", "integrations", "the OpenEnv integration")
_websockets = require("starlette.websockets", "integrations", "the OpenEnv integration")

log = logging.getLogger(__name__)

__all__ = [
    "LLMMarlAction",
    "LLMMarlEnv",
    "LLMMarlEnvironment",
    "LLMMarlObservation",
    "LLMMarlState",
    "NoEpisodeError",
    "OpenEnvServer",
    "create_app",
    "serve",
]

Field = _pydantic.Field

#: The fix when both distributions are installed: uninstalling ``openenv-core`` deletes the
#: files the two share, so ``openenv`` is reinstalled after it.
OPENENV_FIX = "pip uninstall -y openenv-core && pip install --force-reinstall --no-deps openenv"


def _check_openenv_owner(version: Callable[[str], str] = metadata.version) -> list[str]:
    """Warn when both ``openenv`` and the older ``openenv-core`` are installed: both write the
    ``openenv/`` package, so whichever was installed last owns a mix of the two versions'
    files. Returns the installed owners (``["name==version", ...]``)."""
    owners = []
    for name in ("openenv", "openenv-core"):
        try:
            owners.append(f"{name}=={version(name)}")
        except metadata.PackageNotFoundError:
            continue
    if len(owners) > 1:
        warnings.warn(
            f"two distributions install the 'openenv' package ({' and '.join(owners)}); "
            f"upstream's name is now 'openenv'. Fix: {OPENENV_FIX}",
            RuntimeWarning,
            stacklevel=2,
        )
    return owners


_check_openenv_owner()


class NoEpisodeError(RuntimeError):
    """``step`` without a running episode (before ``reset``, or after the episode ended)."""


class LLMMarlAction(_server.Action):
    """The move of the agent whose turn it is."""

    text: str = Field(description="The action text of the agent whose turn it is")
    agent: str | None = Field(
        default=None,
        description="Optional: the acting agent's name; refused unless it is that agent's turn",
    )


class LLMMarlObservation(_server.Observation):
    """What the server answers to ``reset`` and ``step``."""

    text: str = Field(default="", description="The current agent's prompt ('' once done)")
    messages: list[dict[str, str]] = Field(
        default_factory=list, description="The same prompt as chat messages"
    )
    current_agent: str | None = Field(
        default=None, description="Whose turn it is; None once the episode is over"
    )
    acted: str | None = Field(
        default=None, description="The agent whose action produced this observation"
    )
    agents: list[str] = Field(default_factory=list, description="Agents still playing")
    rewards: dict[str, float] = Field(
        default_factory=dict, description="This step's reward of every agent"
    )
    returns: dict[str, float] = Field(
        default_factory=dict, description="Each agent's total reward so far this episode"
    )
    terminations: dict[str, bool] = Field(default_factory=dict)
    truncations: dict[str, bool] = Field(default_factory=dict)
    info: dict[str, Any] = Field(
        default_factory=dict, description="The current agent's info dict (JSON values)"
    )


class LLMMarlState(_server.State):
    """The session's episode: OpenEnv's ``episode_id`` and ``step_count``, and whose turn."""

    env_id: str = ""
    current_agent: str | None = None
    agents: list[str] = Field(default_factory=list)
    returns: dict[str, float] = Field(default_factory=dict)


class LLMMarlEnvironment(
    _server.Environment[LLMMarlAction, LLMMarlObservation, LLMMarlState]  # type: ignore[misc]
):
    """One registered environment (its AEC form) as an OpenEnv ``Environment``.

    Args:
        env_id: A registered id, e.g. ``"llm_marl_envs/MazeCollab-v0"``.
        **env_kwargs: Passed to :func:`llm_marl_envs.make`.

    The AEC environment is built at the first ``reset``, so OpenEnv's metadata and schema
    endpoints cost nothing.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True  # each session builds its own environment

    def __init__(self, env_id: str, **env_kwargs: Any) -> None:
        super().__init__()
        self.env_spec = llm_marl_envs.spec(env_id)  # an unknown id fails here
        self.env_id = self.env_spec.id
        self.env_kwargs = dict(env_kwargs)
        self._env: Any = None
        self._state = LLMMarlState(env_id=self.env_id)
        self._returns: dict[str, float] = {}
        self._terminations: dict[str, bool] = {}
        self._truncations: dict[str, bool] = {}

    # ------------------------------------------------------------------ OpenEnv API
    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> LLMMarlObservation:
        """Start an episode; ``options`` go to the environment's ``reset`` (e.g. ``row_index``)."""
        if kwargs:
            raise ValueError(
                f"unknown reset argument(s) {sorted(kwargs)}: reset takes seed, episode_id and "
                f"options (the environment's reset options, e.g. {{'row_index': 3}})"
            )
        if self._env is None:
            self._env = llm_marl_envs.make(self.env_id, **self.env_kwargs)
        self._env.reset(seed=seed, options=options)
        agents = self._env.possible_agents
        self._returns = {a: 0.0 for a in agents}
        self._terminations = {a: False for a in agents}
        self._truncations = {a: False for a in agents}
        self._skip_finished()
        self._state = LLMMarlState(episode_id=episode_id, step_count=0, env_id=self.env_id)
        return self._observe(acted=None, rewards={a: 0.0 for a in agents})

    def step(
        self, action: LLMMarlAction | str, timeout_s: float | None = None, **kwargs: Any
    ) -> LLMMarlObservation:
        """Play ``action`` for the agent whose turn it is."""
        env = self._env
        if env is None or not env.agents:
            raise NoEpisodeError(
                "no episode is running: call reset() first (and after each episode)"
            )
        text, named = (action, None) if isinstance(action, str) else (action.text, action.agent)
        agent = env.agent_selection
        if named is not None and named != agent:
            raise ValueError(f"it is {agent}'s turn, not {named}'s: nothing was played")
        env.step(text)
        rewards = {a: float(env.rewards.get(a, 0.0)) for a in env.possible_agents}
        for a in env.agents:
            self._terminations[a] = bool(env.terminations[a])
            self._truncations[a] = bool(env.truncations[a])
        self._skip_finished()
        self._state.step_count += 1
        return self._observe(acted=agent, rewards=rewards)

    @property
    def state(self) -> LLMMarlState:
        env = self._env
        live = list(env.agents) if env is not None else []
        self._state.current_agent = env.agent_selection if live else None
        self._state.agents = live
        self._state.returns = dict(self._returns)
        return self._state

    def get_metadata(self) -> Any:
        spec = self.env_spec
        return _server_types.EnvironmentMetadata(
            name=spec.id,
            description=f"{spec.description} Agents: {spec.agents}. Turns: {spec.turns}.",
            version=llm_marl_envs.__version__,
        )

    def close(self) -> None:
        if self._env is not None:
            self._env.close()

    # ------------------------------------------------------------------ helpers
    def _skip_finished(self) -> None:
        """Step the finished agents out (AEC dead steps), so the agent to act is a live one."""
        env = self._env
        while env.agents and (
            env.terminations[env.agent_selection] or env.truncations[env.agent_selection]
        ):
            env.step(None)

    def _observe(self, acted: str | None, rewards: dict[str, float]) -> LLMMarlObservation:
        env = self._env
        for agent, reward in rewards.items():
            self._returns[agent] += reward
        current = env.agent_selection if env.agents else None
        info = json_safe(env.infos[current]) if current is not None else {}
        return LLMMarlObservation(
            text=str(env.observe(current)) if current is not None else "",
            messages=list(info.get("messages", [])),
            current_agent=current,
            acted=acted,
            agents=list(env.agents),
            rewards=rewards,
            returns=dict(self._returns),
            terminations=dict(self._terminations),
            truncations=dict(self._truncations),
            info=info,
            reward=rewards[acted] if acted is not None else None,
            done=current is None,
        )


class LLMMarlEnv(_client.EnvClient[LLMMarlAction, LLMMarlObservation, LLMMarlState]):
    """OpenEnv's WebSocket client for a served environment (async; ``.sync()`` for sync).

    ``step`` takes an :class:`LLMMarlAction` or a plain string (the current agent's text).
    """

    def _step_payload(self, action: LLMMarlAction | str) -> dict[str, Any]:
        if isinstance(action, str):
            return {"text": action}
        return action.model_dump()

    def _parse_result(self, payload: dict[str, Any]) -> Any:
        reward, done = payload.get("reward"), bool(payload.get("done", False))
        observation = LLMMarlObservation(**payload.get("observation", {}), reward=reward, done=done)
        return _types.StepResult(observation=observation, reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> LLMMarlState:
        return LLMMarlState(**payload)


#: Seconds an MCP session over HTTP may stay idle before OpenEnv's reaper ends it, and a
#: WebSocket client may stay silent before its session is closed.
SESSION_TIMEOUT = 300.0
#: The largest HTTP body or WebSocket message a server takes.
MAX_BODY_BYTES = 2**20
#: Connections (and their requests) a served app handles at once; beyond: HTTP 503.
MAX_CONNECTIONS = 64


def create_app(
    env_id: str,
    *,
    max_concurrent_envs: int = 16,
    api_key: str | None = None,
    allowed_hosts: Any = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    session_timeout: float = SESSION_TIMEOUT,
    **env_kwargs: Any,
) -> Any:
    """OpenEnv's FastAPI app serving ``env_id`` (one environment per WebSocket session),
    wrapped in :class:`~llm_marl_envs.core.asgi_guard.Guard`: the key (``api_key``), the
    ``Host`` and ``Origin`` names (``allowed_hosts``: a set of names, or None for any), the
    body and message size (``max_body_bytes``) and JSON bounds before OpenEnv sees a request,
    a JSON error for anything that fails, and WebSocket clients silent for
    ``session_timeout`` seconds closed; MCP sessions over HTTP idle that long are ended by
    OpenEnv's own reaper.

    The environment is built once here, so a bad id or argument fails now rather than at
    every session. OpenEnv's ``ENABLE_WEB_INTERFACE=1`` adds its web UI, as for any OpenEnv
    environment.
    """
    from llm_marl_envs.core.asgi_guard import Guard, GuardSettings

    env_id = llm_marl_envs.spec(env_id).id
    llm_marl_envs.make(env_id, **env_kwargs).close()
    app = _server.create_app(
        functools.partial(LLMMarlEnvironment, env_id, **env_kwargs),
        LLMMarlAction,
        LLMMarlObservation,
        env_name=env_id.rpartition("/")[2],
        concurrency_config=_server_types.ConcurrencyConfig(
            max_concurrent_envs=max_concurrent_envs, session_timeout=session_timeout
        ),
    )
    app.add_middleware(_ClientGoneIsNotAnError)
    app.add_exception_handler(NoEpisodeError, _stateless_step)
    hosts = None if allowed_hosts is None else frozenset(allowed_hosts)
    settings = GuardSettings(
        api_key=api_key,
        allowed_hosts=hosts,
        max_body_bytes=max_body_bytes,
        ws_idle_timeout=session_timeout,
    )
    app.add_middleware(Guard, settings=settings)
    return app


async def _stateless_step(request: Any, error: Exception) -> Any:
    """HTTP 409 for a step with no episode: over HTTP, every request builds a fresh
    environment (OpenEnv's stateless endpoints), so only a WebSocket session has one."""
    responses = require("starlette.responses", "integrations", "the OpenEnv integration")
    scheme = "wss" if request.url.scheme == "https" else "ws"
    route = f"{scheme}://{request.url.netloc}/ws"
    return responses.JSONResponse(
        status_code=409,
        content={
            "detail": (
                f"{request.method} {request.url.path} has no episode to step: each stateless HTTP "
                f"request builds a fresh environment. Play episodes over the WebSocket session "
                f"at {route}, as OpenEnv's clients do (LLMMarlEnv(base_url=...).sync() or "
                "GenericEnvClient)"
            )
        },
    )


def serve(
    env_id: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    block: bool = True,
    max_concurrent_envs: int = 16,
    log_level: str = "warning",
    api_key: str | None = None,
    allowed_hosts: Any = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    session_timeout: float = SESSION_TIMEOUT,
    **env_kwargs: Any,
) -> OpenEnvServer | None:
    """Serve ``env_id`` with OpenEnv's server on ``host:port`` (uvicorn).

    Args:
        env_id: A registered id.
        host: Interface to listen on (keep ``127.0.0.1`` unless others must reach it).
        port: TCP port; 0 picks a free one (read ``server.url``).
        block: True: run until Ctrl-C and return None. False: run in a background thread and
            return the running :class:`OpenEnvServer`.
        max_concurrent_envs: Most WebSocket sessions (= environments) at once.
        log_level: uvicorn's log level.
        api_key: If set, every request and WebSocket must send ``Authorization: Bearer KEY``
            (else 401, or the socket refused). Without one, a server beyond loopback warns.
        allowed_hosts: Host names (besides loopback's and ``host``) that ``Host`` and
            ``Origin`` may name; a server bound to every interface takes any ``Host`` when None.
        max_body_bytes: The largest HTTP body or WebSocket message (413 / close 1009).
        session_timeout: Seconds a WebSocket client may stay silent, or an MCP session idle,
            before its session ends.
        **env_kwargs: Passed to :func:`llm_marl_envs.make` for every session.

    uvicorn runs with a connection cap (:data:`MAX_CONNECTIONS`: 503 beyond it), a 5 s
    keep-alive, a 64 KiB header limit, WebSocket pings every 20 s, and a shutdown bounded at
    5 s whatever the clients do.
    """
    from llm_marl_envs.core.asgi_guard import GuardSettings, is_loopback

    if api_key is None and not is_loopback(host):
        log.warning(
            "serving %s on %s without an API key: anyone who can reach this port can play it",
            env_id,
            host,
        )
    app = create_app(
        env_id,
        max_concurrent_envs=max_concurrent_envs,
        api_key=api_key,
        allowed_hosts=GuardSettings.hosts(host, allowed_hosts),
        max_body_bytes=max_body_bytes,
        session_timeout=session_timeout,
        **env_kwargs,
    )
    server = OpenEnvServer(
        app, host, port, log_level=log_level, start=not block, max_message_bytes=max_body_bytes
    )
    if not block:
        return server
    server.run()
    return None


class OpenEnvServer:
    """An ASGI app served by uvicorn on a socket bound at once (port 0: a free port).

    ``url`` is ``http://host:port``; ``close()`` (or leaving a ``with`` block) stops the
    server and waits for its thread.
    """

    def __init__(
        self,
        app: Any,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        log_level: str = "warning",
        start: bool = True,
        startup_timeout: float = 30.0,
        max_message_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        uvicorn = require("uvicorn", "integrations", "serving OpenEnv environments")
        self._socket = socket.create_server((host, port))
        self.host = host
        self.port = self._socket.getsockname()[1]
        self._server = uvicorn.Server(
            uvicorn.Config(
                app,
                log_level=log_level,
                lifespan="on",
                limit_concurrency=MAX_CONNECTIONS,
                timeout_keep_alive=5,
                timeout_graceful_shutdown=5,
                h11_max_incomplete_event_size=64 * 2**10,
                ws_max_size=max_message_bytes,
                ws_ping_interval=20.0,
                ws_ping_timeout=20.0,
            )
        )
        self._thread: threading.Thread | None = None
        if start:
            self._thread = threading.Thread(
                target=self.run, name=f"openenv-server-{self.port}", daemon=True
            )
            self._thread.start()
            deadline = time.monotonic() + startup_timeout
            while not self._server.started:
                if not self._thread.is_alive() or time.monotonic() > deadline:
                    self.close()
                    raise RuntimeError(f"the OpenEnv server on {self.url} did not start")
                time.sleep(0.01)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def run(self) -> None:
        """Serve in this thread until :meth:`close` (or Ctrl-C in the main thread)."""
        try:
            self._server.run(sockets=[self._socket])
        finally:
            self._socket.close()

    def close(self, timeout: float = 10.0) -> None:
        """Stop serving (open sessions are closed) and wait for the server thread."""
        self._server.should_exit = True
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._socket.close()

    def __enter__(self) -> OpenEnvServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"


class _ClientGoneIsNotAnError:
    """ASGI middleware: a WebSocket client that closed first is no server error.

    OpenEnv's session endpoint (0.3.0) answers a client's ``close`` message by closing the
    socket itself; when the client has already gone (as OpenEnv's own client does right after
    sending ``close``) Starlette raises ``WebSocketDisconnect``, which uvicorn would log as
    "Exception in ASGI application" after every session.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await self.app(scope, receive, send)
        except _websockets.WebSocketDisconnect:
            if scope.get("type") != "websocket":
                raise
