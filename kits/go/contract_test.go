package earshot

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

// The partner API's vocabulary as the protocol's TypeScript writes it (`npm run contract`). The kit
// is held to it: an event type, a code or an operation the file gains fails this suite until the kit
// learns it.
const contractPath = "../../packages/protocol/test-data/contract.json"

// contract is the part of the file the kit is compared with.
type contract struct {
	Operations map[string]struct {
		Method     string `json:"method"`
		Path       string `json:"path"`
		AtMostOnce *bool  `json:"atMostOnce"`
	} `json:"operations"`
	Push struct {
		Check struct {
			Header        string `json:"header"`
			HeaderValue   string `json:"headerValue"`
			AudioIDPrefix string `json:"audioIdPrefix"`
		} `json:"check"`
	} `json:"push"`
	EventTypes  []string `json:"eventTypes"`
	ChangeTypes []string `json:"changeTypes"`
	Codes       []struct {
		Code       int    `json:"code"`
		Name       string `json:"name"`
		HTTPStatus int    `json:"httpStatus"`
	} `json:"codes"`
	Limits map[string]float64 `json:"limits"`
}

// The operations the kit calls, by their path (the wire fixes paths; the contract names them by
// operationId), with the kit's call; and those it leaves out on purpose, by operationId.
var (
	kitOperations = map[string]string{
		tokenPath:            "Token",
		audiosPath:           "QueryAudios",
		changesPath:          "Changes",
		callbackPath:         "ConfirmReceipt",
		endpointsListPath:    "ListEndpoints",
		endpointsAddPath:     "AddEndpoint",
		endpointsUpdatePath:  "UpdateEndpoint",
		endpointsRemovePath:  "RemoveEndpoint",
		endpointsCheckPath:   "CheckReceiver",
		deliveriesListPath:   "ListDeliveries",
		deliveriesReplayPath: "ReplayDelivery, ReplaySince",
		levelsPath:           "Levels",
		keyRotatePath:        "RotateKey",
		portalLinkPath:       "PortalLink",
	}
	operationsLeftOut = map[string]string{
		"fetchAudio": "DownloadAudio follows the denoiseUrl links it is given",
	}
	kitChangeTypes = []string{ChangeCreated, ChangeTranscriptAdded, ChangeUpdated, ChangeDeleted}
)

func readContract(t *testing.T) []byte {
	t.Helper()
	text, err := os.ReadFile(contractPath)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

func decodeContract(t *testing.T, text []byte) *contract {
	t.Helper()
	var c contract
	if err := json.Unmarshal(text, &c); err != nil {
		t.Fatalf("%s: %v", contractPath, err)
	}
	return &c
}

// contractDrift lists every way the kit differs from the contract, one line each.
func contractDrift(c *contract) []string {
	drift := operationDrift(c)
	drift = append(drift, atMostOnceDrift(c)...)
	drift = append(drift, eventTypeDrift(c)...)
	drift = append(drift, setDrift("change type", c.ChangeTypes, kitChangeTypes)...)
	drift = append(drift, codeDrift(c)...)
	drift = append(drift, checkDrift(c)...)
	return append(drift, limitDrift(c)...)
}

func operationDrift(c *contract) []string {
	var drift []string
	inContract := map[string]bool{}
	for id, operation := range c.Operations {
		inContract[operation.Path] = true
		call, called := kitOperations[operation.Path]
		switch {
		case called && operation.Method != "POST":
			drift = append(drift, fmt.Sprintf("operation %s is %s %s; the kit's %s sends POST", id, operation.Method, operation.Path, call))
		case !called && operationsLeftOut[id] == "":
			drift = append(drift, fmt.Sprintf("operation %s (%s %s) is neither called by the kit nor left out on purpose", id, operation.Method, operation.Path))
		}
	}
	for path, call := range kitOperations {
		if !inContract[path] {
			drift = append(drift, fmt.Sprintf("the path %s, which the kit's %s calls, is no operation of the contract", path, call))
		}
	}
	sort.Strings(drift)
	return drift
}

// atMostOnceDrift: the calls the kit retries only after a refusal that did nothing (atMostOnce, by
// path) are exactly the operations the contract marks atMostOnce.
func atMostOnceDrift(c *contract) []string {
	var drift []string
	paths := map[string]bool{}
	for id, operation := range c.Operations {
		paths[operation.Path] = true
		kit := atMostOnce[operation.Path]
		switch {
		case operation.AtMostOnce == nil:
			drift = append(drift, fmt.Sprintf("operation %s does not say whether it is atMostOnce", id))
		case *operation.AtMostOnce && !kit:
			drift = append(drift, fmt.Sprintf("operation %s is atMostOnce in the contract; the kit retries it after any transient failure", id))
		case !*operation.AtMostOnce && kit:
			drift = append(drift, fmt.Sprintf("operation %s is not atMostOnce in the contract; the kit treats it as one", id))
		}
	}
	for path := range atMostOnce {
		if !paths[path] {
			drift = append(drift, fmt.Sprintf("the kit's atMostOnce path %s is no operation of the contract", path))
		}
	}
	sort.Strings(drift)
	return drift
}

// eventTypeDrift asks the kit's push parser itself whether it accepts each event type of the contract.
func eventTypeDrift(c *contract) []string {
	drift := setDrift("event type", c.EventTypes, eventTypes)
	for _, eventType := range c.EventTypes {
		if _, err := parsePushEvent(samplePush(eventType), "evt-1"); err != nil {
			drift = append(drift, fmt.Sprintf("event type %s: the kit refuses a push of it: %v", eventType, err))
		}
	}
	return drift
}

func samplePush(eventType string) []byte {
	data := `{"deviceUid":"d","title":"t","denoiseUrl":"https://cdn.example/a.mp3","recordDuration":1}`
	if eventType == EventDeleted {
		data = `{}`
	}
	return []byte(fmt.Sprintf(`{"eventId":"evt-1","audioId":"a-1","eventType":%q,"occurredAt":"2026-01-01T00:00:00Z","data":%s}`,
		eventType, data))
}

func codeDrift(c *contract) []string {
	var drift []string
	seen := map[int]bool{}
	for _, entry := range c.Codes {
		seen[entry.Code] = true
		if name := CodeName(entry.Code); name != entry.Name {
			drift = append(drift, fmt.Sprintf("code %d is %s; the kit names it %q", entry.Code, entry.Name, name))
		}
		if entry.HTTPStatus != entry.Code/10 {
			drift = append(drift, fmt.Sprintf("code %d is answered with HTTP %d, not code / 10", entry.Code, entry.HTTPStatus))
		}
	}
	for code, name := range codeNames {
		if !seen[code] {
			drift = append(drift, fmt.Sprintf("code %d (%s), which the kit knows, is not in the contract", code, name))
		}
	}
	return drift
}

func checkDrift(c *contract) []string {
	check := c.Push.Check
	if !strings.EqualFold(check.Header, checkHeader) || check.HeaderValue != checkHeaderValue ||
		check.AudioIDPrefix != checkAudioIDPrefix {
		return []string{fmt.Sprintf("the receiver check is %s: %s and audioIds %s…; the kit looks for %s: %s and %s…",
			check.Header, check.HeaderValue, check.AudioIDPrefix, checkHeader, checkHeaderValue, checkAudioIDPrefix)}
	}
	return nil
}

func limitDrift(c *contract) []string {
	kit := map[string]int64{
		"pageSizeMax":      MaxPageSize,
		"eventIdMaxLength": MaxEventIDLength,
		"keyVersionMax":    MaxKeyVersion,
		"enterpriseIdMax":  maxEnterpriseID,
	}
	var drift []string
	for name, value := range kit {
		if c.Limits[name] != float64(value) {
			drift = append(drift, fmt.Sprintf("limit %s is %.0f; the kit has %d", name, c.Limits[name], value))
		}
	}
	return drift
}

// setDrift names what one list has and the other lacks.
func setDrift(what string, contractValues, kitValues []string) []string {
	in := func(values []string, value string) bool {
		for _, each := range values {
			if each == value {
				return true
			}
		}
		return false
	}
	var drift []string
	for _, value := range contractValues {
		if !in(kitValues, value) {
			drift = append(drift, fmt.Sprintf("%s %s is in the contract but unknown to the kit", what, value))
		}
	}
	for _, value := range kitValues {
		if !in(contractValues, value) {
			drift = append(drift, fmt.Sprintf("%s %s, which the kit knows, is not in the contract", what, value))
		}
	}
	sort.Strings(drift)
	return drift
}

func TestKitSpeaksTheContract(t *testing.T) {
	c := decodeContract(t, readContract(t))
	if len(c.EventTypes) == 0 || len(c.Codes) == 0 || len(c.Operations) == 0 {
		t.Fatalf("%s lacks event types, codes or operations", contractPath)
	}
	if drift := contractDrift(c); len(drift) > 0 {
		t.Errorf("the Go kit differs from %s:\n  %s\nteach the kit what the contract says (or fix the protocol and run npm run contract)",
			contractPath, strings.Join(drift, "\n  "))
	}
}

// A copy of the contract that gained or lost something must make the comparison fail, naming it.
func TestContractDriftIsReported(t *testing.T) {
	for name, mutate := range map[string]func(c map[string]interface{}) string{
		"an event type": func(c map[string]interface{}) string {
			c["eventTypes"] = append(c["eventTypes"].([]interface{}), "recording.archived")
			return "recording.archived"
		},
		"a code": func(c map[string]interface{}) string {
			c["codes"] = append(c["codes"].([]interface{}), map[string]interface{}{"code": 4999, "name": "NEW", "httpStatus": 499})
			return "code 4999"
		},
		"an operation": func(c map[string]interface{}) string {
			c["operations"].(map[string]interface{})["archive"] = map[string]interface{}{"method": "POST", "path": "/openapi/v1/archive"}
			return "operation archive"
		},
		"an operation marked atMostOnce": func(c map[string]interface{}) string {
			c["operations"].(map[string]interface{})["updateEndpoint"].(map[string]interface{})["atMostOnce"] = true
			return "operation updateEndpoint is atMostOnce in the contract"
		},
		"an operation no longer atMostOnce": func(c map[string]interface{}) string {
			c["operations"].(map[string]interface{})["rotateKey"].(map[string]interface{})["atMostOnce"] = false
			return "operation rotateKey is not atMostOnce in the contract"
		},
		"an operation the kit calls, gone": func(c map[string]interface{}) string {
			delete(c["operations"].(map[string]interface{}), "queryRecordings")
			return "the path " + audiosPath
		},
	} {
		var copied map[string]interface{}
		if err := json.Unmarshal(readContract(t), &copied); err != nil {
			t.Fatal(err)
		}
		named := mutate(copied)
		text, _ := json.Marshal(copied)
		drift := strings.Join(contractDrift(decodeContract(t, text)), "\n")
		if !strings.Contains(drift, named) {
			t.Errorf("with %s added the comparison does not name %q; it says:\n%s", name, named, drift)
		}
	}
}
