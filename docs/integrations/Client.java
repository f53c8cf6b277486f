// A tokenmill client in one file with nothing but the JDK (17+): streams a chat answer,
// then lets the model call a Java function and answers with its result.
//
//   java Client.java [BASE_URL]      (default http://127.0.0.1:8080; API key from $TOKENMILL_API_KEY)
//
// It speaks OpenAI's API (/v1/chat/completions), so it works against any server that
// does. The JSON helpers at the end are only what this example needs.
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public class Client {
  static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
  static String baseUrl;

  public static void main(String[] args) throws Exception {
    baseUrl = args.length > 0 ? args[0] : "http://127.0.0.1:8080";

    // 1. A streamed answer: Server-Sent Events, one "data: {chunk}" line per piece.
    System.out.print("streamed: ");
    Map<String, Object> ask = new LinkedHashMap<>();
    ask.put("model", "default");
    ask.put("messages", List.of(Map.of("role", "user", "content", "Name three colours.")));
    ask.put("max_tokens", 24);
    ask.put("temperature", 0);
    ask.put("stream", true);
    HttpResponse<java.util.stream.Stream<String>> stream =
        HTTP.send(post("/v1/chat/completions", Json.write(ask)), HttpResponse.BodyHandlers.ofLines());
    check(stream.statusCode(), "stream");
    stream.body().forEach(line -> {
      if (!line.startsWith("data: ") || line.equals("data: [DONE]")) return;
      Map<?, ?> chunk = (Map<?, ?>) Json.read(line.substring(6));
      List<?> choices = (List<?>) chunk.get("choices");
      if (choices == null || choices.isEmpty()) return;
      Object content = ((Map<?, ?>) ((Map<?, ?>) choices.get(0)).get("delta")).get("content");
      if (content != null) System.out.print(content);
    });
    System.out.println();

    // 2. A tool call: the model must call get_weather; its arguments always validate.
    Map<String, Object> parameters = Map.of(
        "type", "object",
        "properties", Map.of("city", Map.of("type", "string", "maxLength", 40)),
        "required", List.of("city"));
    List<Object> tools = List.of(Map.of("type", "function", "function", Map.of(
        "name", "get_weather", "description", "Current weather in a city", "parameters", parameters)));
    List<Object> messages = new ArrayList<>();
    messages.add(Map.of("role", "user", "content", "What is the weather in Paris?"));
    Map<String, Object> call = new LinkedHashMap<>();
    call.put("model", "default");
    call.put("messages", messages);
    call.put("tools", tools);
    call.put("tool_choice", "required");
    call.put("temperature", 0);
    Map<?, ?> reply = complete(call);
    Map<?, ?> message = (Map<?, ?>) ((Map<?, ?>) ((List<?>) reply.get("choices")).get(0)).get("message");
    Map<?, ?> toolCall = (Map<?, ?>) ((List<?>) message.get("tool_calls")).get(0);
    Map<?, ?> function = (Map<?, ?>) toolCall.get("function");
    String arguments = (String) function.get("arguments");
    System.out.println("tool call: " + function.get("name") + " " + arguments);
    String city = (String) ((Map<?, ?>) Json.read(arguments)).get("city");
    String result = getWeather(city);
    System.out.println("tool result: " + result);

    // 3. The result goes back with the call's id; the model answers in words.
    messages.add(message);
    messages.add(Map.of("role", "tool", "tool_call_id", toolCall.get("id"), "content", result));
    call.put("tool_choice", "none");
    call.put("max_tokens", 32);
    Map<?, ?> answer = complete(call);
    Map<?, ?> last = (Map<?, ?>) ((Map<?, ?>) ((List<?>) answer.get("choices")).get(0)).get("message");
    System.out.println("answer: " + last.get("content"));
  }

  // The function the model may call.
  static String getWeather(String city) {
    return Json.write(Map.of("city", city, "temperature_c", 18, "sky", "clear"));
  }

  static Map<?, ?> complete(Map<String, Object> body) throws Exception {
    HttpResponse<String> response = HTTP.send(post("/v1/chat/completions", Json.write(body)),
                                              HttpResponse.BodyHandlers.ofString());
    check(response.statusCode(), response.body());
    return (Map<?, ?>) Json.read(response.body());
  }

  static HttpRequest post(String path, String json) {
    HttpRequest.Builder builder = HttpRequest.newBuilder(URI.create(baseUrl + path))
        .timeout(Duration.ofMinutes(5))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json));
    String key = System.getenv("TOKENMILL_API_KEY");
    if (key != null && !key.isEmpty()) builder.header("Authorization", "Bearer " + key);
    return builder.build();
  }

  static void check(int status, String what) {
    if (status != 200) throw new IllegalStateException("HTTP " + status + ": " + what);
  }

  // JSON to and from Map / List / String / Number / Boolean / null.
  static final class Json {
    static String write(Object value) {
      StringBuilder out = new StringBuilder();
      write(value, out);
      return out.toString();
    }

    private static void write(Object value, StringBuilder out) {
      if (value == null) {
        out.append("null");
      } else if (value instanceof String s) {
        out.append('"');
        for (char c : s.toCharArray()) {
          switch (c) {
            case '"' -> out.append("\\\"");
            case '\\' -> out.append("\\\\");
            case '\n' -> out.append("\\n");
            case '\r' -> out.append("\\r");
            case '\t' -> out.append("\\t");
            default -> {
              if (c < 0x20) out.append(String.format("\\u%04x", (int) c)); else out.append(c);
            }
          }
        }
        out.append('"');
      } else if (value instanceof Map<?, ?> map) {
        out.append('{');
        boolean first = true;
        for (Map.Entry<?, ?> e : map.entrySet()) {
          if (!first) out.append(',');
          first = false;
          write(String.valueOf(e.getKey()), out);
          out.append(':');
          write(e.getValue(), out);
        }
        out.append('}');
      } else if (value instanceof List<?> list) {
        out.append('[');
        for (int i = 0; i < list.size(); i++) {
          if (i > 0) out.append(',');
          write(list.get(i), out);
        }
        out.append(']');
      } else {
        out.append(value);  // numbers and booleans
      }
    }

    static Object read(String text) {
      Json parser = new Json(text);
      Object value = parser.value();
      parser.skipSpace();
      if (parser.at != text.length()) throw parser.error("trailing text");
      return value;
    }

    private final String text;
    private int at = 0;

    private Json(String text) { this.text = text; }

    private Object value() {
      skipSpace();
      if (at >= text.length()) throw error("unexpected end");
      char c = text.charAt(at);
      if (c == '{') {
        Map<String, Object> map = new LinkedHashMap<>();
        at++;
        skipSpace();
        if (peek('}')) return map;
        do {
          skipSpace();
          String key = string();
          skipSpace();
          expect(':');
          map.put(key, value());
          skipSpace();
        } while (peek(','));
        expect('}');
        return map;
      }
      if (c == '[') {
        List<Object> list = new ArrayList<>();
        at++;
        skipSpace();
        if (peek(']')) return list;
        do {
          list.add(value());
          skipSpace();
        } while (peek(','));
        expect(']');
        return list;
      }
      if (c == '"') return string();
      for (String word : new String[] {"true", "false", "null"}) {
        if (text.startsWith(word, at)) {
          at += word.length();
          return word.equals("null") ? null : Boolean.valueOf(word);
        }
      }
      int start = at;
      while (at < text.length() && "+-0123456789.eE".indexOf(text.charAt(at)) >= 0) at++;
      if (start == at) throw error("unexpected '" + c + "'");
      return Double.valueOf(text.substring(start, at));
    }

    private String string() {
      expect('"');
      StringBuilder out = new StringBuilder();
      while (at < text.length()) {
        char c = text.charAt(at++);
        if (c == '"') return out.toString();
        if (c != '\\') {
          out.append(c);
          continue;
        }
        char e = text.charAt(at++);
        switch (e) {
          case 'n' -> out.append('\n');
          case 'r' -> out.append('\r');
          case 't' -> out.append('\t');
          case 'b' -> out.append('\b');
          case 'f' -> out.append('\f');
          case 'u' -> {
            out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
            at += 4;
          }
          default -> out.append(e);
        }
      }
      throw error("unterminated string");
    }

    private void skipSpace() {
      while (at < text.length() && Character.isWhitespace(text.charAt(at))) at++;
    }

    private boolean peek(char c) {
      if (at < text.length() && text.charAt(at) == c) {
        at++;
        return true;
      }
      return false;
    }

    private void expect(char c) {
      if (!peek(c)) throw error("expected '" + c + "'");
    }

    private IllegalArgumentException error(String what) {
      return new IllegalArgumentException("JSON: " + what + " at " + at);
    }
  }
}
