import os

from earshot_partner import Client, EarshotError

client = Client(
    base_url=os.environ["EARSHOT_BASE_URL"],
    enterprise_id=int(os.environ["EARSHOT_ENTERPRISE_ID"]),
    key_version=int(os.environ.get("EARSHOT_KEY_VERSION", "1")),
    secret=os.environ["EARSHOT_SECRET"],
)

page = client.query_audios({"deviceUid": "DEV-0001", "size": 50})
print(f"DEV-0001 has {page['total']} recordings")
for page in client.iterate_audios({"startTime": "2026-11-01T00:00:00Z", "size": 100}):
    for item in page["items"]:
        print(item["audioId"], item["data"]["title"], "transcript" if "transcriptId" in item["data"] else "audio")

cursor = None  # keep page["nextCursor"] with what you applied: the next run goes on from there
for page in client.iterate_changes(cursor):
    for change in page["items"]:
        print(change["seq"], change["change"], change["audioId"])
    cursor = page["nextCursor"]

try:
    client.confirm_receipt("aud_never_pushed")
except EarshotError as error:
    print(f"refused: {error.code} {error.name}: {error.msg} (requestId {error.request_id})")
