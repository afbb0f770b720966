import sys

from earshot_partner import Client

audio_id, path = sys.argv[1], sys.argv[2]
client = Client.from_env()

# Resumed where a cut connection left it (path + ".part"), checked against the link's SHA-256.
audio = client.download_audio(audio_id, path)
print(f"saved {path}: {audio.bytes} bytes of {audio.content_type}, resumed {audio.resumed} times")
print(f"sha256 {audio.sha256} ({'verified' if audio.verified else 'the link states none'})")
