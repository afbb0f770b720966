from earshot_partner import Client, EarshotError

# EARSHOT_ENTERPRISE_ID and EARSHOT_SECRET; EARSHOT_BASE_URL defaults to http://127.0.0.1:8080.
client = Client.from_env()

page = client.query_audios({"deviceUid": "REC-ALPHA-01", "size": 5})
print(f"REC-ALPHA-01 has {page['total']} recordings; the newest:")
for item in page["items"]:
    data = item["data"]
    print(item["audioId"], data["title"], "transcript" if "transcriptId" in data else "audio")

everything = sum(len(page["items"]) for page in client.iterate_audios({"size": 100}))
print(f"{everything} recordings in all")

cursor = None  # keep the cursor with what you applied: the next run goes on from there
changes = 0
for page in client.iterate_changes(cursor):
    changes += len(page["items"])
    cursor = page["nextCursor"]
print(f"{changes} changes in the feed, up to cursor {cursor}")

try:
    client.confirm_receipt("aud_never_pushed")
except EarshotError as error:
    print(f"refused: {error.code} {error.name}: {error.msg} (requestId {error.request_id})")
