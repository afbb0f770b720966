"""The kit against the partner API's vocabulary as the protocol's TypeScript writes it
(packages/protocol/test-data/contract.json, ``npm run contract``): an event type, a code or an
operation the file gains fails this suite until the kit learns it."""

from __future__ import annotations

import copy
import json
import os
from typing import Any

from earshot_partner import client, envelope, errors, messages, receiver, self_service
from earshot_partner.errors import EarshotError

from .support import REPOSITORY, TimedTestCase

CONTRACT = os.path.join(REPOSITORY, "packages", "protocol", "test-data", "contract.json")

#: The operations the kit calls, by the contract's operationId, and those it leaves out on purpose.
KIT_OPERATIONS = {
    "issueToken": client.TOKEN_PATH,
    "queryRecordings": client.AUDIOS_PATH,
    "readChanges": client.CHANGES_PATH,
    "confirmReceipt": client.CALLBACK_PATH,
    "listEndpoints": self_service.ENDPOINTS_LIST_PATH,
    "addEndpoint": self_service.ENDPOINTS_ADD_PATH,
    "updateEndpoint": self_service.ENDPOINTS_UPDATE_PATH,
    "removeEndpoint": self_service.ENDPOINTS_REMOVE_PATH,
    "checkEndpoint": self_service.ENDPOINTS_CHECK_PATH,
    "listDeliveries": self_service.DELIVERIES_LIST_PATH,
    "replayDeliveries": self_service.DELIVERIES_REPLAY_PATH,
    "readLevels": self_service.LEVELS_PATH,
    "rotateKey": self_service.KEY_ROTATE_PATH,
    "mintPortalLink": self_service.PORTAL_LINK_PATH,
}
LEFT_OUT = {"fetchAudio": "download_audio follows the denoiseUrl links it is given"}

KIT_LIMITS = {
    "pageMax": messages.MAX_PAGE,
    "pageSizeMax": messages.MAX_PAGE_SIZE,
    "eventIdMaxLength": envelope.MAX_EVENT_ID_LENGTH,
    "keyVersionMax": envelope.MAX_KEY_VERSION,
    "enterpriseIdMax": client.MAX_ENTERPRISE_ID,
}


def load_contract() -> dict:
    with open(CONTRACT, encoding="utf-8") as file:
        return json.load(file)


def drift(contract: dict) -> list[str]:
    """Every way the kit differs from the contract, one line each."""
    return (
        operation_drift(contract["operations"])
        + at_most_once_drift(contract["operations"])
        + event_type_drift(contract["eventTypes"])
        + code_drift(contract["codes"])
        + check_drift(contract["push"]["check"])
        + [
            f"limit {name} is {contract['limits'].get(name)}; the kit has {value}"
            for name, value in KIT_LIMITS.items()
            if contract["limits"].get(name) != value
        ]
    )


def operation_drift(operations: dict[str, Any]) -> list[str]:
    found = []
    for name, operation in operations.items():
        route = f"{operation['method']} {operation['path']}"
        if name in KIT_OPERATIONS and route != f"POST {KIT_OPERATIONS[name]}":
            found.append(f"operation {name} is {route}; the kit sends POST {KIT_OPERATIONS[name]}")
        elif name not in KIT_OPERATIONS and name not in LEFT_OUT:
            found.append(f"operation {name} ({route}) is neither called by the kit nor left out")
    missing = [name for name in KIT_OPERATIONS if name not in operations]
    return found + [f"operation {name}, which the kit calls, is not in the contract" for name in missing]


def at_most_once_drift(operations: dict[str, Any]) -> list[str]:
    """The calls the kit resends only after a refusal that did nothing (self_service.AT_MOST_ONCE) are
    exactly the operations the contract marks atMostOnce."""
    kit = {name for name, path in KIT_OPERATIONS.items() if path in self_service.AT_MOST_ONCE}
    marked = {name for name, operation in operations.items() if operation.get("atMostOnce") is True}
    unmarked = [f"operation {name} is atMostOnce in the contract; the kit resends it after any retryable failure"
                for name in sorted(marked - kit)]
    extra = [f"operation {name} is not atMostOnce in the contract; the kit treats it as one"
             for name in sorted(kit - marked)]
    unknown = [f"the kit's at-most-once path {path} is no operation it calls"
               for path in sorted(self_service.AT_MOST_ONCE - set(KIT_OPERATIONS.values()))]
    return unmarked + extra + unknown


def event_type_drift(event_types: list[str]) -> list[str]:
    """Asks the kit's push parser itself whether it accepts each event type."""
    missing = [known for known in messages.EVENT_TYPES if known not in event_types]
    found = [f"event type {known}, which the kit knows, is not in the contract" for known in missing]
    for event_type in event_types:
        try:
            messages.parse_push_event(sample_push(event_type))
        except EarshotError as error:
            found.append(f"event type {event_type} is in the contract but the kit refuses it: {error.msg}")
    return found


def sample_push(event_type: str) -> dict:
    data = {"deviceUid": "d", "title": "t", "denoiseUrl": "https://cdn.example/a.mp3", "recordDuration": 1}
    return {
        "eventId": "evt-1",
        "audioId": "a-1",
        "eventType": event_type,
        "occurredAt": "2026-01-01T00:00:00Z",
        "data": {} if event_type == messages.DELETED else data,
    }


def code_drift(codes: list[dict]) -> list[str]:
    found = []
    for entry in codes:
        known = errors.CATALOGUE.get(entry["code"])
        if known is None or known[0] != entry["name"]:
            found.append(f"code {entry['code']} is {entry['name']}; the kit has {known and known[0]}")
        if errors.http_status_of(entry["code"]) != entry["httpStatus"]:
            found.append(f"code {entry['code']} is answered with HTTP {entry['httpStatus']}, not code // 10")
    listed = {entry["code"] for entry in codes}
    missing = [(code, name) for code, (name, _) in errors.CATALOGUE.items() if code not in listed]
    unknown = [f"code {code} ({name}), known to the kit, is not in the contract" for code, name in missing]
    return found + unknown


def check_drift(check: dict) -> list[str]:
    marked = receiver.is_check_push(check["headerValue"], check["audioIdPrefix"] + "x")
    same_prefix = check["audioIdPrefix"] == receiver.CHECK_AUDIO_ID_PREFIX
    if check["header"].lower() == receiver.CHECK_HEADER and marked and same_prefix:
        return []
    kit = f"{receiver.CHECK_HEADER} and {receiver.CHECK_AUDIO_ID_PREFIX}"
    return [f"the receiver check is {check}; the kit looks for {kit}"]


class ContractTest(TimedTestCase):
    def test_the_kit_speaks_the_contract(self) -> None:
        contract = load_contract()
        self.assertTrue(contract["eventTypes"] and contract["codes"] and contract["operations"])
        self.assertTrue(all(isinstance(each.get("atMostOnce"), bool) for each in contract["operations"].values()),
                        "every operation of the contract says whether it is atMostOnce")
        found = drift(contract)
        if found:
            self.fail(
                f"the Python kit differs from {CONTRACT}:\n  "
                + "\n  ".join(found)
                + "\nteach the kit what the contract says (or fix the protocol and run npm run contract)"
            )

    def test_a_contract_that_gained_something_is_reported(self) -> None:
        gains = {
            "recording.archived": lambda c: c["eventTypes"].append("recording.archived"),
            "code 4999": lambda c: c["codes"].append({"code": 4999, "name": "NEW", "httpStatus": 499}),
            "operation archive": lambda c: c["operations"].update(
                archive={"method": "POST", "path": "/openapi/v1/archive"}
            ),
            "operation updateEndpoint is atMostOnce": lambda c: c["operations"]["updateEndpoint"].update(
                atMostOnce=True
            ),
            "operation rotateKey is not atMostOnce": lambda c: c["operations"]["rotateKey"].update(
                atMostOnce=False
            ),
        }
        original = load_contract()
        for named, gain in gains.items():
            with self.subTest(gained=named):
                mutated = copy.deepcopy(original)
                gain(mutated)
                self.assertIn(named, "\n".join(drift(mutated)))
