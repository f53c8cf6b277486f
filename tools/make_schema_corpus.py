#!/usr/bin/env python3
"""Writes the JSON Schema corpus of the structured-output tests (tests/e2e/test_schema_corpus.py):

  tests/fixtures/schema_corpus.jsonl         schemas a grammar can enforce completely
  tests/fixtures/schema_unenforceable.jsonl  schemas with a keyword no grammar can enforce
                                             (uniqueItems, multipleOf, if/then/else,
                                             dependentSchemas)

One JSON object a line: {"name", "source", "classes", "schema"}. `source` says where the
schema comes from: "pydantic" (Model.model_json_schema() or TypeAdapter(...).json_schema()
on the models below), "openai_tool" (the parameters of openai.pydantic_function_tool(Model):
OpenAI's strict form, every property required and additionalProperties false),
"handwritten" (Draft 2020-12 cases aimed at one keyword each) or "spring_ai" (what Spring
AI's BeanOutputConverter, through victools' jsonschema-generator, writes for a Java
record). `classes` lists the keyword classes found in the schema (see classify()), so
results can be counted per class. Property order is kept: it is the order the engine
writes properties in.

Every schema is checked before it is written: it is a valid Draft 2020-12 schema
(check_schema), every pattern is a regular expression without look-around or
back-references, the enforceable ones use no unenforceable keyword, and each admits an
instance (one is built from the schema and validated, formats included). The output is
deterministic for given pydantic and openai versions.

Usage: python3 tools/make_schema_corpus.py
"""
import datetime
import enum
import ipaddress
import json
import random
import re
import sys
import uuid
from pathlib import Path
from typing import Annotated, Generic, Literal, Optional, TypeVar, Union

try:
    import re._parser as regex_parser
except ImportError:  # Python < 3.11
    import sre_parse as regex_parser

import pydantic
from jsonschema import Draft202012Validator
from pydantic import (AnyUrl, BaseModel, ConfigDict, Field, HttpUrl, NonNegativeFloat, NonNegativeInt,
                      PositiveFloat, PositiveInt, StringConstraints, TypeAdapter, WithJsonSchema, conint, conlist,
                      constr, create_model)

try:
    import openai
except ImportError:
    sys.exit("make_schema_corpus: the openai package is missing (python3 -m pip install openai)")

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "schema_corpus.jsonl"
OUT_UNENFORCEABLE = ROOT / "tests" / "fixtures" / "schema_unenforceable.jsonl"
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from schema_check import validation_error, validator  # noqa: E402

try:
    import email_validator  # noqa: F401  (EmailStr needs it)
    from pydantic import EmailStr as Email
except ImportError:
    Email = Annotated[str, WithJsonSchema({"format": "email", "type": "string"})]  # what EmailStr writes

# --- Pydantic models -----------------------------------------------------------------
# Shapes from the APIs people put behind an LLM: commerce, users, calendars, logs,
# sensors, bookings, extraction results. Free text is bounded (max_length) as a database
# column would be, which also keeps a small model's answers short.

Zip = Annotated[str, Field(pattern=r"^[0-9]{5}$")]
Sku = Annotated[str, Field(pattern=r"^[A-Z]{2}-\d{4}$", description="Stock keeping unit, e.g. AB-1234")]
Name = Annotated[str, Field(min_length=1, max_length=80)]
ShortText = Annotated[str, Field(max_length=200)]
Phone = Annotated[str, Field(pattern=r"^\+[1-9][0-9]{7,14}$")]
CountryCode = Annotated[str, Field(min_length=2, max_length=2, pattern=r"^[A-Z]{2}$")]
LanguageCode = Annotated[str, Field(pattern=r"^[a-z]{2}$")]
Semver = Annotated[str, Field(pattern=r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")]
Percent = Annotated[float, Field(ge=0, le=100)]
Latitude = Annotated[float, Field(ge=-90, le=90)]
Longitude = Annotated[float, Field(ge=-180, le=180)]


class Currency(str, enum.Enum):
    USD = "USD"
    EUR = "EUR"
    GBP = "GBP"
    JPY = "JPY"


class OrderStatus(str, enum.Enum):
    PENDING = "pending"
    PAID = "paid"
    SHIPPED = "shipped"
    DELIVERED = "delivered"
    CANCELLED = "cancelled"


class Priority(str, enum.Enum):
    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    URGENT = "urgent"


class Role(str, enum.Enum):
    VIEWER = "viewer"
    EDITOR = "editor"
    ADMIN = "admin"


class Severity(str, enum.Enum):
    DEBUG = "DEBUG"
    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"
    CRITICAL = "CRITICAL"


class PaymentMethod(str, enum.Enum):
    CARD = "card"
    BANK_TRANSFER = "bank_transfer"
    PAYPAL = "paypal"


class Weekday(enum.IntEnum):
    MONDAY = 1
    TUESDAY = 2
    WEDNESDAY = 3
    THURSDAY = 4
    FRIDAY = 5
    SATURDAY = 6
    SUNDAY = 7


class Genre(str, enum.Enum):
    DRAMA = "drama"
    COMEDY = "comedy"
    ACTION = "action"
    HORROR = "horror"
    DOCUMENTARY = "documentary"
    SCIFI = "sci-fi"


class Address(BaseModel):
    street: Annotated[str, Field(max_length=120)]
    city: Name
    state: Annotated[str, Field(pattern=r"^[A-Z]{2}$")]
    zip: Zip
    country: Literal["US"] = "US"


class Customer(BaseModel):
    id: uuid.UUID
    name: Name
    email: Email
    phone: Optional[Phone] = None
    address: Address
    created_at: datetime.datetime


class LineItem(BaseModel):
    sku: Sku
    description: Optional[ShortText] = None
    quantity: conint(ge=1, le=999)
    unit_price: Annotated[float, Field(ge=0)]
    currency: Currency = Currency.USD


class Order(BaseModel):
    """A customer's order."""
    order_id: Annotated[str, Field(pattern=r"^ORD-[0-9]{8}$")]
    customer: Customer
    items: conlist(LineItem, min_length=1, max_length=20)
    status: OrderStatus
    placed_at: datetime.datetime
    notes: Optional[ShortText] = None
    discount: Annotated[float, Field(ge=0, le=1, description="Fraction off the subtotal")] = 0


class InvoiceLine(BaseModel):
    description: ShortText
    hours: Annotated[float, Field(gt=0, le=24)]
    rate: PositiveFloat


class Invoice(BaseModel):
    number: Annotated[str, Field(pattern=r"^INV-\d{4}-\d{6}$")]
    issued: datetime.date
    due: datetime.date
    lines: conlist(InvoiceLine, min_length=1, max_length=50)
    subtotal: NonNegativeFloat
    tax_rate: Annotated[float, Field(ge=0, lt=1)]
    total: NonNegativeFloat
    paid: bool
    payment_method: Optional[PaymentMethod] = None


class User(BaseModel):
    id: uuid.UUID
    username: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{2,15}$")]
    email: Email
    age: Optional[conint(ge=13, le=120)] = None
    roles: Annotated[list[Role], Field(max_length=3)] = []
    is_active: bool = True
    last_login: Optional[datetime.datetime] = None


class UserProfile(BaseModel):
    display_name: Name
    bio: Optional[Annotated[str, Field(max_length=280)]] = None
    website: Optional[AnyUrl] = None
    avatar_url: Optional[HttpUrl] = None
    birthday: Optional[datetime.date] = None
    timezone: Annotated[str, Field(pattern=r"^[A-Za-z]+/[A-Za-z_]+$", examples=["Europe/Paris"])]


class CalendarEvent(BaseModel):
    title: Name
    starts_at: datetime.datetime
    ends_at: datetime.datetime
    location: Optional[Annotated[str, Field(max_length=120)]] = None
    attendees: Annotated[list[Email], Field(max_length=20)] = []
    all_day: bool = False
    reminder: Optional[datetime.timedelta] = Field(default=None, description="How long before the start")
    recurrence: Optional[Literal["daily", "weekly", "monthly", "yearly"]] = None


class SearchQuery(BaseModel):
    q: Annotated[str, Field(min_length=1, max_length=200)]
    page: PositiveInt = 1
    per_page: conint(ge=1, le=100) = 20
    sort: Literal["relevance", "date", "price_asc", "price_desc"] = "relevance"
    price_min: Optional[NonNegativeFloat] = None
    price_max: Optional[NonNegativeFloat] = None
    in_stock_only: bool = False


class SensorReading(BaseModel):
    sensor_id: Annotated[str, Field(pattern=r"^SN-[0-9A-F]{8}$")]
    timestamp: datetime.datetime
    temperature_c: Annotated[float, Field(ge=-40, le=85)]
    humidity_pct: Percent
    battery_v: Annotated[float, Field(gt=0, lt=5)]
    gateway: ipaddress.IPv4Address


class NetworkInterface(BaseModel):
    name: Annotated[str, Field(pattern=r"^(eth|wlan)[0-9]$")]
    mac: Annotated[str, Field(pattern=r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$")]
    ipv4: Optional[ipaddress.IPv4Address] = None
    ipv6: Annotated[list[ipaddress.IPv6Address], Field(max_length=4)] = []
    mtu: conint(ge=576, le=9000) = 1500
    up: bool


class TreeNode(BaseModel):
    name: Annotated[str, Field(max_length=40)]
    children: list["TreeNode"] = []


class LinkedListNode(BaseModel):
    value: int
    next: Optional["LinkedListNode"] = None


class Category(BaseModel):
    id: PositiveInt
    name: Name
    subcategories: Annotated[list["Category"], Field(max_length=5)] = []


class Comment(BaseModel):
    author: Annotated[str, Field(max_length=40)]
    body: Annotated[str, Field(min_length=1, max_length=500)]
    posted_at: datetime.datetime
    replies: Annotated[list["Comment"], Field(max_length=10)] = []


class File(BaseModel):
    type: Literal["file"]
    name: Annotated[str, Field(max_length=64)]
    size_bytes: NonNegativeInt


class Folder(BaseModel):
    type: Literal["folder"]
    name: Annotated[str, Field(max_length=64)]
    entries: list[Annotated[Union[File, "Folder"], Field(discriminator="type")]] = []


class Cat(BaseModel):
    kind: Literal["cat"]
    name: Name
    lives_left: conint(ge=0, le=9)


class Dog(BaseModel):
    kind: Literal["dog"]
    name: Name
    good_boy: bool = True


class Parrot(BaseModel):
    kind: Literal["parrot"]
    name: Name
    vocabulary: Annotated[list[Annotated[str, Field(max_length=20)]], Field(max_length=10)] = []


class PetOwner(BaseModel):
    owner: Name
    pets: Annotated[list[Annotated[Union[Cat, Dog, Parrot], Field(discriminator="kind")]], Field(max_length=5)]


class Card(BaseModel):
    method: Literal["card"]
    last4: Annotated[str, Field(pattern=r"^[0-9]{4}$")]
    expiry: Annotated[str, Field(pattern=r"^(0[1-9]|1[0-2])/[0-9]{2}$")]


class BankTransfer(BaseModel):
    method: Literal["bank_transfer"]
    iban: Annotated[str, Field(pattern=r"^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$")]


class Wallet(BaseModel):
    method: Literal["wallet"]
    provider: Literal["apple_pay", "google_pay", "paypal"]


class PaymentRequest(BaseModel):
    amount: PositiveFloat
    currency: Literal["USD", "EUR", "GBP", "JPY"]
    payment: Union[Card, BankTransfer, Wallet] = Field(discriminator="method")
    idempotency_key: uuid.UUID


class Circle(BaseModel):
    shape: Literal["circle"]
    radius: PositiveFloat


class Rectangle(BaseModel):
    shape: Literal["rectangle"]
    width: PositiveFloat
    height: PositiveFloat


class Triangle(BaseModel):
    shape: Literal["triangle"]
    a: PositiveFloat
    b: PositiveFloat
    c: PositiveFloat


class Drawing(BaseModel):
    shapes: Annotated[list[Annotated[Union[Circle, Rectangle, Triangle], Field(discriminator="shape")]],
                      Field(min_length=1, max_length=8)]
    background: Annotated[str, Field(pattern=r"^#[0-9a-fA-F]{6}$")] = "#ffffff"


class EmailNotification(BaseModel):
    channel: Literal["email"]
    to: Email
    subject: Annotated[str, Field(max_length=120)]


class SmsNotification(BaseModel):
    channel: Literal["sms"]
    to: Phone
    text: Annotated[str, Field(max_length=160)]


class PushNotification(BaseModel):
    channel: Literal["push"]
    device_token: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    title: Annotated[str, Field(max_length=60)]
    badge: Optional[NonNegativeInt] = None


class Notification(BaseModel):
    id: uuid.UUID
    send_at: datetime.datetime
    delivery: Union[EmailNotification, SmsNotification, PushNotification] = Field(discriminator="channel")


class Product(BaseModel):
    sku: Sku
    name: Name
    price: Annotated[float, Field(gt=0, le=100000)]
    tags: Annotated[list[Annotated[str, Field(max_length=24)]], Field(max_length=10)] = []
    dimensions_cm: tuple[PositiveFloat, PositiveFloat, PositiveFloat]
    weight_kg: PositiveFloat
    in_stock: bool
    attributes: dict[str, Annotated[str, Field(max_length=40)]] = {}


class Inventory(BaseModel):
    warehouse: Annotated[str, Field(pattern=r"^WH-[A-Z]{3}$")]
    counts: Annotated[dict[str, NonNegativeInt], Field(description="Units on hand by SKU")]
    counted_at: datetime.datetime


class Coordinates(BaseModel):
    lat: Latitude
    lon: Longitude
    altitude_m: Optional[float] = None


class OpeningHours(BaseModel):
    day: Weekday
    opens: datetime.time
    closes: datetime.time


class Place(BaseModel):
    name: Name
    coordinates: Coordinates
    rating: Optional[Annotated[float, Field(ge=1, le=5)]] = None
    opening_hours: Annotated[list[OpeningHours], Field(max_length=7)] = []
    website: Optional[HttpUrl] = None


class Passenger(BaseModel):
    first_name: Name
    last_name: Name
    date_of_birth: datetime.date
    passport: Optional[Annotated[str, Field(pattern=r"^[A-Z0-9]{6,9}$")]] = None


class FlightBooking(BaseModel):
    flight_number: Annotated[str, Field(pattern=r"^[A-Z]{2}[0-9]{1,4}$")]
    origin: Annotated[str, Field(pattern=r"^[A-Z]{3}$", description="IATA airport code")]
    destination: Annotated[str, Field(pattern=r"^[A-Z]{3}$", description="IATA airport code")]
    departure: datetime.datetime
    passengers: conlist(Passenger, min_length=1, max_length=9)
    cabin: Literal["economy", "premium_economy", "business", "first"] = "economy"


class HotelReservation(BaseModel):
    hotel_id: uuid.UUID
    check_in: datetime.date
    check_out: datetime.date
    guests: conint(ge=1, le=8)
    rooms: conint(ge=1, le=4) = 1
    special_requests: Optional[Annotated[str, Field(max_length=300)]] = None


class Ingredient(BaseModel):
    name: Name
    amount: PositiveFloat
    unit: Literal["g", "kg", "ml", "l", "tsp", "tbsp", "cup", "piece"]


class Recipe(BaseModel):
    title: Name
    servings: conint(ge=1, le=24)
    prep_time: datetime.timedelta
    ingredients: conlist(Ingredient, min_length=1, max_length=30)
    steps: conlist(Annotated[str, Field(max_length=300)], min_length=1, max_length=20)
    vegetarian: bool


class Movie(BaseModel):
    title: Name
    year: conint(ge=1888, le=2100)
    genres: Annotated[list[Genre], Field(min_length=1, max_length=3)]
    rating: Annotated[float, Field(ge=0, le=10)]
    cast: Annotated[list[Name], Field(max_length=10)] = []
    runtime_minutes: PositiveInt


class Book(BaseModel):
    isbn: Annotated[str, Field(pattern=r"^97[89][0-9]{10}$")]
    title: Annotated[str, Field(min_length=1, max_length=200)]
    authors: conlist(Name, min_length=1, max_length=5)
    published: datetime.date
    pages: conint(ge=1, le=5000)
    language: LanguageCode = "en"


class LogEntry(BaseModel):
    timestamp: datetime.datetime
    level: Severity
    logger: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_.]*$", max_length=60)]
    message: Annotated[str, Field(max_length=500)]
    request_id: Optional[uuid.UUID] = None
    duration_ms: Optional[NonNegativeFloat] = None
    host: ipaddress.IPv4Address


class HttpRequestLog(BaseModel):
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
    path: Annotated[str, Field(pattern=r"^/[A-Za-z0-9/_.-]*$", max_length=200)]
    status: conint(ge=100, le=599)
    latency: datetime.timedelta
    client_ip: Union[ipaddress.IPv4Address, ipaddress.IPv6Address]
    user_agent: Optional[Annotated[str, Field(max_length=200)]] = None


class RetryPolicy(BaseModel):
    max_attempts: conint(ge=0, le=10) = 3
    backoff: datetime.timedelta


class WebhookConfig(BaseModel):
    url: HttpUrl
    secret: constr(min_length=16, max_length=64)
    events: conlist(Literal["order.created", "order.paid", "order.shipped", "refund.issued"], min_length=1,
                    max_length=4)
    active: bool = True
    retry: RetryPolicy


class ApiKey(BaseModel):
    key: Annotated[str, Field(pattern=r"^sk-[A-Za-z0-9]{32}$")]
    scopes: conlist(Literal["read", "write", "admin"], min_length=1, max_length=3)
    expires_at: Optional[datetime.datetime] = None


class Task(BaseModel):
    id: PositiveInt
    title: Name
    done: bool = False
    priority: Priority = Priority.NORMAL
    due: Optional[datetime.date] = None
    tags: Annotated[list[Annotated[str, Field(max_length=20)]], Field(max_length=5)] = []
    subtasks: Annotated[list["Task"], Field(max_length=10)] = []


class Project(BaseModel):
    name: Name
    owner: User
    tasks: Annotated[list[Task], Field(max_length=50)]
    budget: Optional[NonNegativeFloat] = None
    deadline: datetime.date


class Employee(BaseModel):
    employee_id: Annotated[str, Field(pattern=r"^E[0-9]{6}$")]
    name: Name
    department: Literal["engineering", "sales", "support", "finance", "hr"]
    manager_id: Optional[Annotated[str, Field(pattern=r"^E[0-9]{6}$")]] = None
    salary: Annotated[float, Field(gt=0, le=10_000_000)]
    hired: datetime.date
    skills: Annotated[dict[str, conint(ge=1, le=5)], Field(description="Skill name to level 1-5")] = {}


class OrgChartNode(BaseModel):
    employee_id: Annotated[str, Field(pattern=r"^E[0-9]{6}$")]
    title: Annotated[str, Field(max_length=60)]
    reports: Annotated[list["OrgChartNode"], Field(max_length=8)] = []


class TransactionCategory(str, enum.Enum):
    GROCERIES = "groceries"
    RENT = "rent"
    SALARY = "salary"
    TRAVEL = "travel"
    OTHER = "other"


class BankTransaction(BaseModel):
    id: uuid.UUID
    account: Annotated[str, Field(pattern=r"^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$")]
    amount: float
    direction: Literal["debit", "credit"]
    booked_at: datetime.datetime
    counterparty: Optional[Name] = None
    category: Optional[TransactionCategory] = None


class StockQuote(BaseModel):
    symbol: Annotated[str, Field(pattern=r"^[A-Z]{1,5}$")]
    price: PositiveFloat
    change: float
    change_pct: Annotated[float, Field(ge=-100)]
    volume: NonNegativeInt
    as_of: datetime.datetime


class DailyForecast(BaseModel):
    date: datetime.date
    high_c: Annotated[float, Field(ge=-90, le=60)]
    low_c: Annotated[float, Field(ge=-90, le=60)]
    condition: Literal["sunny", "cloudy", "rain", "snow", "storm", "fog"]
    precipitation_mm: NonNegativeFloat
    wind_kph: Annotated[float, Field(ge=0, le=400)]


class WeatherForecast(BaseModel):
    location: Name
    days: conlist(DailyForecast, min_length=1, max_length=7)


class ChatMessage(BaseModel):
    role: Literal["system", "user", "assistant", "tool"]
    content: Optional[Annotated[str, Field(max_length=1000)]]
    name: Optional[Annotated[str, Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")]] = None


class Conversation(BaseModel):
    id: uuid.UUID
    messages: Annotated[list[ChatMessage], Field(min_length=1, max_length=20)]
    created: datetime.datetime


class SurveyResponse(BaseModel):
    respondent: uuid.UUID
    satisfaction: conint(ge=1, le=10)
    would_recommend: bool
    answers: dict[str, Union[int, bool, Annotated[str, Field(max_length=200)]]] = {}
    comments: Optional[Annotated[str, Field(max_length=1000)]] = None


class Point(BaseModel):
    type: Literal["Point"]
    coordinates: tuple[Longitude, Latitude]


class LineString(BaseModel):
    type: Literal["LineString"]
    coordinates: Annotated[list[tuple[Longitude, Latitude]], Field(min_length=2, max_length=50)]


class Feature(BaseModel):
    type: Literal["Feature"]
    geometry: Union[Point, LineString] = Field(discriminator="type")
    properties: dict[str, Annotated[str, Field(max_length=80)]] = {}


class Color(BaseModel):
    hex: Annotated[str, Field(pattern=r"^#[0-9a-fA-F]{6}$")]
    rgb: tuple[conint(ge=0, le=255), conint(ge=0, le=255), conint(ge=0, le=255)]
    name: Optional[Annotated[str, Field(max_length=30)]] = None


class Release(BaseModel):
    version: Semver
    released: datetime.date
    changelog: Annotated[list[Annotated[str, Field(max_length=200)]], Field(max_length=20)] = []
    yanked: bool = False


class PackageManifest(BaseModel):
    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")]
    version: Semver
    dependencies: dict[Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]*$")], str] = {}
    license: Literal["MIT", "Apache-2.0", "BSD-3-Clause", "GPL-3.0-only"]
    repository: Optional[AnyUrl] = None


class DatabaseConfig(BaseModel):
    host: Annotated[str, Field(pattern=r"^[a-z0-9.-]+$", max_length=253)]
    port: conint(ge=1, le=65535) = 5432
    user: Annotated[str, Field(max_length=63)]
    password_env: Annotated[str, Field(pattern=r"^[A-Z_][A-Z0-9_]*$")]
    pool_size: conint(ge=1, le=100) = 10
    connect_timeout: datetime.timedelta
    ssl: bool = True


class HealthCheck(BaseModel):
    ok: bool
    latency_ms: NonNegativeFloat
    detail: Optional[ShortText] = None


class ServiceHealth(BaseModel):
    status: Literal["ok", "degraded", "down"]
    checks: dict[str, HealthCheck]
    uptime: datetime.timedelta
    version: Semver


class Appointment(BaseModel):
    patient_id: Annotated[str, Field(pattern=r"^P[0-9]{7}$")]
    doctor_id: Annotated[str, Field(pattern=r"^D[0-9]{4}$")]
    slot_start: datetime.datetime
    duration_min: Literal[15, 30, 45, 60]
    reason: ShortText
    telehealth: bool = False


class Medication(BaseModel):
    name: Name
    dose_mg: Annotated[float, Field(gt=0, le=5000)]
    times_per_day: conint(ge=1, le=6)
    start: datetime.date
    end: Optional[datetime.date] = None


class VehicleTelemetry(BaseModel):
    vin: Annotated[str, Field(pattern=r"^[A-HJ-NPR-Z0-9]{17}$")]
    recorded_at: datetime.datetime
    speed_kph: Annotated[float, Field(ge=0, le=400)]
    fuel_pct: Percent
    position: Coordinates
    odometer_km: NonNegativeInt
    engine_on: bool


class TrackingEvent(BaseModel):
    status: Literal["label_created", "picked_up", "in_transit", "out_for_delivery", "delivered", "exception"]
    at: datetime.datetime
    location: Optional[Annotated[str, Field(max_length=80)]] = None


class Shipment(BaseModel):
    tracking_number: Annotated[str, Field(pattern=r"^1Z[0-9A-Z]{16}$")]
    carrier: Literal["UPS", "FedEx", "DHL", "USPS"]
    ship_to: Address
    events: Annotated[list[TrackingEvent], Field(max_length=20)] = []


class Review(BaseModel):
    product_sku: Sku
    stars: conint(ge=1, le=5)
    title: Annotated[str, Field(max_length=100)]
    body: Annotated[str, Field(max_length=2000)]
    verified_purchase: bool
    helpful_votes: NonNegativeInt = 0


class Coupon(BaseModel):
    code: Annotated[str, Field(pattern=r"^[A-Z0-9]{6,12}$")]
    percent_off: Optional[Annotated[float, Field(gt=0, le=100)]] = None
    amount_off: Optional[PositiveFloat] = None
    valid_until: datetime.date
    max_redemptions: Optional[PositiveInt] = None


class CartItem(BaseModel):
    sku: Sku
    quantity: conint(ge=1, le=99)


class Cart(BaseModel):
    cart_id: uuid.UUID
    items: Annotated[list[CartItem], Field(max_length=50)]
    coupon: Optional[Annotated[str, Field(pattern=r"^[A-Z0-9]{6,12}$")]] = None
    updated_at: datetime.datetime


class ErrorDetail(BaseModel):
    loc: Annotated[list[Union[str, int]], Field(max_length=6)]
    msg: ShortText
    type: Annotated[str, Field(max_length=40)]


class ErrorResponse(BaseModel):
    code: conint(ge=400, le=599)
    message: ShortText
    details: Annotated[list[ErrorDetail], Field(max_length=10)] = []


class TimeEntry(BaseModel):
    day: Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    hours: Annotated[float, Field(ge=0, le=24)]
    project_code: Annotated[str, Field(pattern=r"^P-[0-9]{3}$")]


class Timesheet(BaseModel):
    employee_id: Annotated[str, Field(pattern=r"^E[0-9]{6}$")]
    week_start: datetime.date
    entries: Annotated[list[TimeEntry], Field(max_length=14)]
    approved: bool = False


class ExchangeRates(BaseModel):
    base: Currency
    date: datetime.date
    rates: dict[Annotated[str, StringConstraints(pattern=r"^[A-Z]{3}$")], PositiveFloat]


class Thresholds(BaseModel):
    low: float
    high: float


class DeviceConfig(BaseModel):
    device_id: Annotated[str, Field(pattern=r"^dev-[0-9a-f]{12}$")]
    firmware: Semver
    sampling_interval: datetime.timedelta
    thresholds: Thresholds
    enabled_sensors: conlist(Literal["temperature", "humidity", "pressure", "co2"], min_length=1, max_length=4)
    report_to: Optional[ipaddress.IPv6Address] = None


class DnsRecord(BaseModel):
    name: Annotated[str, Field(pattern=r"^([a-z0-9-]+\.)*[a-z0-9-]+\.?$", max_length=253)]
    type: Literal["A", "AAAA", "CNAME", "MX", "TXT"]
    ttl: conint(ge=60, le=86400) = 3600
    value: Annotated[str, Field(max_length=255)]
    priority: Optional[conint(ge=0, le=65535)] = None


class GameScore(BaseModel):
    player: Annotated[str, Field(pattern=r"^[A-Za-z0-9_]{3,16}$")]
    score: NonNegativeInt
    level: conint(ge=1, le=100)
    achievements: Annotated[list[Annotated[str, Field(max_length=30)]], Field(max_length=10)] = []
    played_at: datetime.datetime
    duration: datetime.timedelta


class Track(BaseModel):
    title: Name
    artist: Name
    duration_s: conint(ge=1, le=3600)
    explicit: bool = False


class Playlist(BaseModel):
    name: Name
    tracks: Annotated[list[Track], Field(max_length=25)]
    public: bool = True


class Contact(BaseModel):
    full_name: Name
    emails: Annotated[list[Email], Field(max_length=3)] = []
    phones: Annotated[list[Phone], Field(max_length=3)] = []
    address: Optional[Address] = None
    birthday: Optional[datetime.date] = None
    company: Optional[Name] = None


class Lease(BaseModel):
    unit: Annotated[str, Field(pattern=r"^[0-9]{1,4}[A-Z]?$")]
    tenant: Name
    monthly_rent: PositiveFloat
    deposit: NonNegativeFloat
    start: datetime.date
    term_months: Literal[6, 12, 24]
    pets_allowed: bool = False


class SupportTicketTriage(BaseModel):
    """How a support ticket should be routed."""
    category: Literal["billing", "bug", "feature_request", "account", "other"]
    urgency: conint(ge=1, le=5)
    summary: Annotated[str, Field(max_length=200)]
    needs_human: bool


class ExtractedEntities(BaseModel):
    people: Annotated[list[Name], Field(max_length=10)] = []
    organizations: Annotated[list[Name], Field(max_length=10)] = []
    dates: Annotated[list[datetime.date], Field(max_length=10)] = []
    amounts: Annotated[list[float], Field(max_length=10)] = []


class Sentiment(BaseModel):
    label: Literal["positive", "negative", "neutral"]
    score: Annotated[float, Field(ge=-1, le=1)]
    confidence: Annotated[float, Field(ge=0, le=1)]


class Translation(BaseModel):
    source_language: LanguageCode
    target_language: LanguageCode
    text: Annotated[str, Field(max_length=500)]


class Matrix(BaseModel):
    label: Annotated[str, Field(max_length=40)]
    rows: Annotated[list[Annotated[list[float], Field(min_length=1, max_length=4)]], Field(min_length=1, max_length=4)]


class WordCounts(BaseModel):
    document: Annotated[str, Field(max_length=80)]
    top_words: Annotated[list[tuple[Annotated[str, Field(max_length=20)], PositiveInt]], Field(max_length=10)]


class Histogram(BaseModel):
    metric: Annotated[str, Field(max_length=40)]
    buckets: Annotated[list[tuple[float, NonNegativeInt]], Field(min_length=1, max_length=12)]


class ShiftSchedule(BaseModel):
    worker: Name
    days: Annotated[list[Weekday], Field(min_length=1, max_length=7)]
    start: datetime.time
    end: datetime.time
    break_length: datetime.timedelta


class LoginAttempt(BaseModel):
    model_config = ConfigDict(extra="forbid")
    username: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{2,15}$")]
    ip: Union[ipaddress.IPv4Address, ipaddress.IPv6Address]
    at: datetime.datetime
    success: bool
    mfa: Optional[Literal["totp", "sms", "webauthn"]] = None


class Temperature(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: Annotated[float, Field(gt=-273.15, lt=10000)]
    unit: Literal["C", "F", "K"] = "C"


class PaginationCursor(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cursor: Optional[Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{16}$")]] = None
    limit: conint(gt=0, lt=101) = 25


T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    items: Annotated[list[T], Field(max_length=10)]
    total: NonNegativeInt
    page: PositiveInt = 1
    size: conint(ge=1, le=100) = 10


PYDANTIC_MODELS = [
    Address, Customer, LineItem, Order, Invoice, User, UserProfile, CalendarEvent, SearchQuery, SensorReading,
    NetworkInterface, TreeNode, LinkedListNode, Category, Comment, Folder, PetOwner, PaymentRequest, Drawing,
    Notification, Product, Inventory, Coordinates, Place, Passenger, FlightBooking, HotelReservation, Recipe, Movie,
    Book, LogEntry, HttpRequestLog, WebhookConfig, ApiKey, Task, Project, Employee, OrgChartNode, BankTransaction,
    StockQuote, WeatherForecast, ChatMessage, Conversation, SurveyResponse, Feature, Color, Release,
    PackageManifest, DatabaseConfig, ServiceHealth, Appointment, Medication, VehicleTelemetry, Shipment, Review,
    Coupon, Cart, ErrorResponse, Timesheet, ExchangeRates, DeviceConfig, DnsRecord, GameScore, Playlist, Contact,
    Lease, SupportTicketTriage, ExtractedEntities, Sentiment, Translation, Matrix, WordCounts, Histogram,
    ShiftSchedule, LoginAttempt, Temperature, PaginationCursor,
]

# Paged list responses of some of the models (a generic model, as FastAPI apps write them).
PAGED = [User, Product, Order, Review, BankTransaction, LogEntry, Movie, Task]

# PATCH bodies: the same fields, each optional and null by default, constraints kept.
PARTIAL = [Address, User, Product, CalendarEvent, HotelReservation, Employee, DeviceConfig, Coupon]

# Types that are not models, through TypeAdapter (a top-level array, scalar, tuple, map...).
TYPE_ADAPTERS = [
    ("ProductList", Annotated[list[Product], Field(max_length=5)]),
    ("WordFrequencies", dict[str, NonNegativeInt]),
    ("IdAndLabel", tuple[int, str]),
    ("Scores", tuple[int, ...]),
    ("PercentileSeries", conlist(Annotated[int, Field(ge=0, le=100)], min_length=3, max_length=5)),
    ("Answer", Literal["yes", "no", "maybe"]),
    ("HumanAge", Annotated[int, Field(ge=0, le=150)]),
    ("Timestamp", datetime.datetime),
    ("RequestId", uuid.UUID),
    ("OptionalDeadline", Optional[datetime.date]),
    ("Pet", Annotated[Union[Cat, Dog, Parrot], Field(discriminator="kind")]),
    ("Forest", Annotated[list[TreeNode], Field(max_length=3)]),
    ("Status", OrderStatus),
    ("Synonyms", dict[str, Annotated[list[Annotated[str, Field(max_length=30)]], Field(max_length=5)]]),
    ("LatLon", tuple[Latitude, Longitude]),
    ("PostalCode", Annotated[str, StringConstraints(pattern=r"^[A-Z]{2}-\d{4}$")]),
    ("Timeout", datetime.timedelta),
    ("ServerAddress", ipaddress.IPv6Address),
    ("Homepage", HttpUrl),
    ("Probability", Annotated[float, Field(ge=0, le=1)]),
    ("IdOrName", Union[PositiveInt, Annotated[str, Field(max_length=40)]]),
]


def partial_model(model):
    fields = {}
    for name, info in model.model_fields.items():
        annotation = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
        fields[name] = (Optional[annotation], Field(default=None, description=info.description))
    return create_model(model.__name__ + "Update", **fields)


def pydantic_schemas():
    out = [(m.__name__, m.model_json_schema()) for m in PYDANTIC_MODELS]
    out += [(f"Page[{m.__name__}]", Page[m].model_json_schema()) for m in PAGED]
    out += [(m.__name__ + "Update", partial_model(m).model_json_schema()) for m in PARTIAL]
    out += [(name, TypeAdapter(t).json_schema()) for name, t in TYPE_ADAPTERS]
    return out


# --- OpenAI function tools -----------------------------------------------------------
# Argument models of the tools an assistant is given; pydantic_function_tool makes them
# strict (all properties required, optional ones nullable, additionalProperties false).

class GetWeather(BaseModel):
    """Current weather and a short forecast for a place."""
    city: Annotated[str, Field(max_length=60)]
    country: Optional[CountryCode] = None
    unit: Literal["celsius", "fahrenheit"] = "celsius"
    days: conint(ge=1, le=7) = 1


class SearchFlights(BaseModel):
    """Search one-way flights."""
    origin: Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
    destination: Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
    date: datetime.date
    passengers: conint(ge=1, le=9) = 1
    cabin: Literal["economy", "business", "first"] = "economy"
    max_stops: Optional[conint(ge=0, le=3)] = None


class BookHotel(BaseModel):
    """Book a hotel room."""
    hotel_id: uuid.UUID
    check_in: datetime.date
    nights: conint(ge=1, le=30)
    guests: conint(ge=1, le=6)
    breakfast: bool


class CreateCalendarEvent(BaseModel):
    """Add an event to the user's calendar."""
    title: Annotated[str, Field(max_length=100)]
    start: datetime.datetime
    duration: datetime.timedelta
    attendees: Annotated[list[Email], Field(max_length=10)]
    location: Optional[Annotated[str, Field(max_length=100)]] = None


class SendEmail(BaseModel):
    """Send an email on the user's behalf."""
    to: conlist(Email, min_length=1, max_length=5)
    cc: Annotated[list[Email], Field(max_length=5)] = []
    subject: Annotated[str, Field(max_length=120)]
    body: Annotated[str, Field(max_length=2000)]
    importance: Literal["low", "normal", "high"] = "normal"


class CreateIssue(BaseModel):
    """Open an issue in the tracker."""
    title: Annotated[str, Field(min_length=5, max_length=120)]
    body: Annotated[str, Field(max_length=2000)]
    labels: Annotated[list[Literal["bug", "enhancement", "docs", "question"]], Field(max_length=4)]
    assignee: Optional[Annotated[str, Field(pattern=r"^[a-zA-Z0-9-]{1,39}$")]] = None
    priority: Priority


class Filter(BaseModel):
    column: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_]*$")]
    op: Literal["=", "!=", "<", "<=", ">", ">=", "like"]
    value: Union[Annotated[str, Field(max_length=100)], float, bool]


class QueryDatabase(BaseModel):
    """Run a read-only query against the sales database."""
    table: Literal["orders", "customers", "products", "invoices"]
    filters: Annotated[list[Filter], Field(max_length=5)]
    order_by: Optional[Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_]*( (asc|desc))?$")]] = None
    limit: conint(ge=1, le=1000) = 100


class ConvertCurrency(BaseModel):
    """Convert an amount between currencies at today's rate."""
    amount: PositiveFloat
    source: Currency
    target: Currency


class SetThermostat(BaseModel):
    """Set the thermostat."""
    temperature_c: Annotated[float, Field(ge=10, le=30)]
    mode: Literal["heat", "cool", "auto", "off"]
    until: Optional[datetime.time] = None


class AddTodo(BaseModel):
    """Add an item to a to-do list."""
    list_name: Annotated[str, Field(max_length=40)]
    item: Annotated[str, Field(max_length=140)]
    due: Optional[datetime.date] = None
    priority: Priority = Priority.NORMAL


class TranslateText(BaseModel):
    """Translate text."""
    text: Annotated[str, Field(max_length=1000)]
    source_language: Optional[LanguageCode] = None
    target_language: LanguageCode


class GetStockPrice(BaseModel):
    """Price history of a stock."""
    symbol: Annotated[str, Field(pattern=r"^[A-Z]{1,5}$")]
    range: Literal["1d", "5d", "1mo", "6mo", "1y", "5y"]
    interval: Literal["1m", "5m", "1h", "1d"] = "1d"


class RefundOrder(BaseModel):
    """Refund all or part of an order."""
    order_id: Annotated[str, Field(pattern=r"^ORD-[0-9]{8}$")]
    amount: Annotated[float, Field(gt=0, le=10000)]
    reason: Literal["damaged", "late", "wrong_item", "customer_request"]
    notify_customer: bool


class ScheduleMeeting(BaseModel):
    """Find a slot and invite people."""
    participants: conlist(Email, min_length=1, max_length=10)
    earliest: datetime.datetime
    duration_minutes: Literal[15, 30, 45, 60, 90]
    agenda: Annotated[list[Annotated[str, Field(max_length=80)]], Field(max_length=5)]


class LookupDns(BaseModel):
    """Resolve a DNS name."""
    hostname: Annotated[str, Field(pattern=r"^([a-z0-9-]+\.)+[a-z]{2,}$", max_length=253)]
    record_type: Literal["A", "AAAA", "MX", "TXT", "CNAME"]
    resolver: Optional[ipaddress.IPv4Address] = None


class PlaySong(BaseModel):
    """Play music."""
    query: Annotated[str, Field(max_length=100)]
    shuffle: bool
    volume: conint(ge=0, le=100)


class NavigateTo(BaseModel):
    """Directions to a destination."""
    destination: Annotated[str, Field(max_length=120)]
    mode: Literal["driving", "walking", "cycling", "transit"]
    avoid: Annotated[list[Literal["tolls", "highways", "ferries"]], Field(max_length=3)]
    depart_at: Optional[datetime.datetime] = None


class Section(BaseModel):
    heading: Annotated[str, Field(max_length=80)]
    subsections: Annotated[list["Section"], Field(max_length=4)]


class WriteOutline(BaseModel):
    """Write the outline of a document as nested sections."""
    title: Annotated[str, Field(max_length=100)]
    sections: Annotated[list[Section], Field(min_length=1, max_length=6)]


class RecordExpense(BaseModel):
    """Record an expense for reimbursement."""
    amount: PositiveFloat
    currency: Currency
    spent_on: datetime.date
    category: TransactionCategory
    receipt_url: Optional[HttpUrl] = None
    split_with: Annotated[dict[str, Annotated[float, Field(ge=0, le=1)]], Field(max_length=5)]


OPENAI_TOOLS = [
    ("get_weather", GetWeather), ("search_flights", SearchFlights), ("book_hotel", BookHotel),
    ("create_calendar_event", CreateCalendarEvent), ("send_email", SendEmail), ("create_issue", CreateIssue),
    ("query_database", QueryDatabase), ("convert_currency", ConvertCurrency), ("set_thermostat", SetThermostat),
    ("add_todo", AddTodo), ("translate_text", TranslateText), ("get_stock_price", GetStockPrice),
    ("refund_order", RefundOrder), ("schedule_meeting", ScheduleMeeting), ("lookup_dns", LookupDns),
    ("play_song", PlaySong), ("navigate_to", NavigateTo), ("write_outline", WriteOutline),
    ("record_expense", RecordExpense),
]


def openai_tool_schemas():
    out = []
    for name, model in OPENAI_TOOLS:
        tool = openai.pydantic_function_tool(model, name=name)
        assert tool["function"]["strict"] is True
        out.append((name, tool["function"]["parameters"]))
    return out


# --- Hand-written Draft 2020-12 cases ------------------------------------------------

def obj(properties, required=None, **more):
    """An object schema; every property required unless `required` says otherwise."""
    return {"type": "object", "properties": properties,
            "required": list(properties) if required is None else required, **more}


FORMATS = ["date", "time", "date-time", "duration", "uuid", "email", "ipv4", "ipv6", "hostname", "uri"]
JSON_VALUE = {"anyOf": [{"type": "null"}, {"type": "boolean"}, {"type": "number"}, {"type": "string"},
                        {"type": "array", "items": {"$ref": "#/$defs/json"}},
                        {"type": "object", "additionalProperties": {"$ref": "#/$defs/json"}}]}

HANDWRITTEN = [
    ("age", {"type": "integer", "minimum": 0, "maximum": 150}),
    ("negative_range", {"type": "integer", "minimum": -500, "maximum": -100}),
    ("at_least_1000", {"type": "integer", "minimum": 1000}),
    ("at_most_minus_5", {"type": "integer", "maximum": -5}),
    ("exclusive_integer", {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10}),
    ("integer_with_fractional_bounds", {"type": "integer", "exclusiveMinimum": 0.5, "maximum": 3.5}),
    ("safe_integer", {"type": "integer", "minimum": -9007199254740991, "maximum": 9007199254740991}),
    ("learning_rate", {"type": "number", "exclusiveMinimum": 0, "maximum": 1.5}),
    ("correlation", {"type": "number", "minimum": -1, "maximum": 1}),
    ("below_minus_half", {"type": "number", "exclusiveMaximum": -0.5}),
    ("thermostat_setting", obj({
        "target_c": {"type": "number", "minimum": 5, "maximum": 35},
        "offset_c": {"type": "number", "exclusiveMinimum": -3, "exclusiveMaximum": 3},
        "fan_level": {"type": "integer", "minimum": 0, "maximum": 5},
        "floor": {"type": "integer", "minimum": -3, "maximum": 120}}, additionalProperties=False)),
    *[(f"format_{f.replace('-', '_')}", {"type": "string", "format": f}) for f in FORMATS],
    ("all_formats", obj({f.replace("-", "_"): {"type": "string", "format": f} for f in FORMATS},
                        additionalProperties=False)),
    ("allOf_object_parts", {"allOf": [
        obj({"id": {"type": "integer", "minimum": 1}}),
        {"properties": {"name": {"type": "string", "maxLength": 40}}, "required": ["name"]}]}),
    ("allOf_integer_bounds", {"allOf": [{"type": "integer", "minimum": 0}, {"maximum": 100}]}),
    ("allOf_ref_extension", {
        "$defs": {"animal": obj({"name": {"type": "string", "maxLength": 30}, "legs": {
            "type": "integer", "minimum": 0, "maximum": 8}})},
        "allOf": [{"$ref": "#/$defs/animal"},
                  {"properties": {"wings": {"type": "boolean"}}, "required": ["wings"]}]}),
    ("point_2d", {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}], "items": False,
                  "minItems": 2}),
    ("rgb_triplet", {"type": "array", "prefixItems": [{"type": "integer", "minimum": 0, "maximum": 255}] * 3,
                     "items": False, "minItems": 3}),
    ("route_then_codes", {"type": "array",
                          "prefixItems": [{"enum": ["GET", "POST", "DELETE"]},
                                          {"type": "string", "pattern": "^/[a-z/]*$", "maxLength": 30}],
                          "items": {"type": "integer", "minimum": 100, "maximum": 599}, "minItems": 2,
                          "maxItems": 5}),
    ("word_counts", {"type": "object", "additionalProperties": {"type": "integer"}}),
    ("record_with_extras", {"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}},
                            "required": ["id"], "additionalProperties": {"type": "string", "maxLength": 20},
                            "maxProperties": 4}),
    ("vendor_extensions", {"type": "object", "properties": {"name": {"type": "string", "maxLength": 30}},
                           "required": ["name"],
                           "patternProperties": {"^x-[a-z]+$": {"type": "string", "maxLength": 30}},
                           "additionalProperties": False}),
    ("numbered_slots", {"type": "object", "patternProperties": {
        "^slot_[0-9]$": {"type": "integer", "minimum": 0}, "^label_[a-z]$": {"type": "string", "maxLength": 10}},
        "additionalProperties": False, "maxProperties": 5}),
    ("feature_flags", {"type": "object", "propertyNames": {"pattern": "^[a-z_]{1,20}$"},
                       "additionalProperties": {"type": "boolean"}, "maxProperties": 8}),
    ("env_vars", {"type": "object", "propertyNames": {"pattern": "^[A-Z][A-Z0-9_]*$", "maxLength": 24},
                  "additionalProperties": {"type": "string", "maxLength": 60}}),
    ("one_to_three_measurements", {"type": "object", "additionalProperties": {"type": "number"},
                                   "minProperties": 1, "maxProperties": 3}),
    ("contact_at_least_two", {"type": "object", "properties": {
        "email": {"type": "string", "format": "email"}, "phone": {"type": "string", "pattern": r"^\+[0-9]{8,15}$"},
        "twitter": {"type": "string", "pattern": "^@[A-Za-z0-9_]{1,15}$"}},
        "minProperties": 2, "additionalProperties": False}),
    ("billing", {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 40}, "credit_card": {"type": "string", "pattern": "^[0-9]{16}$"},
        "billing_address": {"type": "string", "maxLength": 80}}, "required": ["name"],
        "dependentRequired": {"credit_card": ["billing_address"]}, "additionalProperties": False}),
    ("postal_address", {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 40}, "street": {"type": "string", "maxLength": 60},
        "city": {"type": "string", "maxLength": 40}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
        "required": ["name"], "dependentRequired": {"street": ["city", "zip"], "zip": ["city"]},
        "additionalProperties": False}),
    ("hours_by_weekday", {"type": "object", "propertyNames": {"enum": ["mon", "tue", "wed", "thu", "fri"]},
                          "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 24}}),
    ("url_slug", {"allOf": [{"type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$"},
                            {"minLength": 3, "maxLength": 24}]}),
    ("paging_limits", obj({"limit": {"type": ["integer", "null"], "minimum": 1, "maximum": 500},
                           "offset": {"type": "integer", "minimum": 0}}, additionalProperties=False)),
    ("int_tree", {"$defs": {"node": obj({"value": {"type": "integer"}, "children": {
        "type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 3}}, additionalProperties=False)},
        "$ref": "#/$defs/node"}),
    ("any_json", {"$defs": {"json": JSON_VALUE}, "$ref": "#/$defs/json"}),
    ("nested_list_via_root", obj({"name": {"type": "string", "maxLength": 20},
                                  "children": {"type": "array", "items": {"$ref": "#"}, "maxItems": 3}},
                                 required=["name"])),
    ("config_with_any_json_values", obj({"service": {"type": "string", "maxLength": 30},
                                         "settings": {"type": "object",
                                                      "additionalProperties": {"$ref": "#/$defs/json"}}},
                                        **{"$defs": {"json": JSON_VALUE}})),
    ("primary_color", {"enum": ["red", "green", "blue"]}),
    ("mixed_enum", {"enum": [1, "two", None, True, {"a": 1}, [1, 2]]}),
    ("ok_const", {"const": "ok"}),
    ("version_const_object", {"const": {"version": 2, "stable": True}}),
    ("not_reserved_username", {"type": "string", "not": {"enum": ["admin", "root", "system"]},
                               "minLength": 1, "maxLength": 16}),
    ("account_not_reserved", obj({"username": {"type": "string", "maxLength": 16,
                                               "not": {"enum": ["admin", "root"]}},
                                  "plan": {"type": "string", "enum": ["free", "pro", "team"],
                                           "not": {"const": "team"}}}, additionalProperties=False)),
    ("nullable_string", {"type": ["string", "null"], "maxLength": 30}),
    ("integer_or_string", {"type": ["integer", "string"], "maximum": 99, "maxLength": 5}),
    ("nullable_fields", obj({"nickname": {"type": ["string", "null"], "maxLength": 20},
                             "score": {"type": ["number", "null"], "minimum": 0},
                             "tags": {"type": ["array", "null"], "items": {"type": "string", "maxLength": 10},
                                      "maxItems": 3}}, additionalProperties=False)),
    ("lowercase_word", {"type": "string", "pattern": "^[a-z]+$", "minLength": 3, "maxLength": 8}),
    ("product_code", {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{3,6}$", "maxLength": 9}),
    ("secure_link", {"type": "string", "pattern": "^https://", "maxLength": 60}),
    ("contains_digit", {"type": "string", "pattern": "[0-9]", "minLength": 4, "maxLength": 12}),
    ("at_least_two_sevens", {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9},
                             "contains": {"const": 7}, "minContains": 2, "maxItems": 6}),
    ("one_or_two_admins", {"type": "array", "items": {"enum": ["admin", "user", "guest"]},
                           "contains": {"const": "admin"}, "minContains": 1, "maxContains": 2, "maxItems": 5}),
    ("date_or_day_count", {"oneOf": [{"type": "string", "format": "date"},
                                     {"type": "integer", "minimum": 0, "maximum": 3650}]}),
    ("digits_or_email", {"anyOf": [{"type": "string", "pattern": "^[0-9]{4,8}$"},
                                   {"type": "string", "format": "email", "maxLength": 40}]}),
    ("integer_or_big_number", {"anyOf": [{"type": "integer", "maximum": 10}, {"type": "number", "minimum": 100}]}),
    ("team", obj({"name": {"type": "string", "minLength": 1, "maxLength": 30},
                  "members": {"type": "array", "items": {"type": "string", "maxLength": 20}, "minItems": 2,
                              "maxItems": 4}}, additionalProperties=False)),
    ("draft07_definitions", {"definitions": {"money": obj({
        "amount": {"type": "number", "minimum": 0}, "currency": {"enum": ["EUR", "USD"]}})},
        "type": "object", "properties": {"price": {"$ref": "#/definitions/money"},
                                         "shipping": {"$ref": "#/definitions/money"}},
        "required": ["price", "shipping"]}),
    ("ref_with_sibling_bounds", {"$defs": {"count": {"type": "integer", "minimum": 0}}, "type": "object",
                                 "properties": {"small": {"$ref": "#/$defs/count", "maximum": 10},
                                                "large": {"$ref": "#/$defs/count", "minimum": 1000}},
                                 "required": ["small", "large"], "additionalProperties": False}),
    ("ref_to_a_property", {"type": "object", "properties": {
        "home": obj({"city": {"type": "string", "maxLength": 30}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}}),
        "work": {"$ref": "#/properties/home"}}, "required": ["home", "work"]}),
    ("any_value", {}),
    ("optional_everything", {"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "boolean"}, "c": {"type": "string", "maxLength": 5}},
        "additionalProperties": False}),
]


# --- Spring AI -----------------------------------------------------------------------
# BeanOutputConverter<T> asks victools' jsonschema-generator (Draft 2020-12, PLAIN_JSON,
# the Jackson module, FORBIDDEN_ADDITIONAL_PROPERTIES_BY_DEFAULT) for T's schema. Records
# become objects in declaration order; a record used once is inlined, one used twice goes
# to $defs; List<X> is an array; Integer/Long integer; Double number; enums a string enum;
# @JsonPropertyDescription a description; required only where @JsonProperty(required = true).

SPRING_SCHEMA = "https://json-schema.org/draft/2020-12/schema"

SPRING_AI = [
    # record ActorsFilms(String actor, List<String> movies) {}  (Spring AI's own example)
    ("ActorsFilms", {"$schema": SPRING_SCHEMA, "type": "object", "properties": {
        "actor": {"type": "string"}, "movies": {"type": "array", "items": {"type": "string"}}},
        "additionalProperties": False}),
    # The reply of docs/integrations/Client.java's get_weather, as a record:
    # record WeatherReport(@JsonProperty(required = true) String city,
    #                      @JsonProperty(value = "temperature_c", required = true) Integer temperatureC,
    #                      @JsonPropertyDescription("clear, cloudy, rain or snow") String sky) {}
    ("WeatherReport", {"$schema": SPRING_SCHEMA, "type": "object", "properties": {
        "city": {"type": "string"}, "temperature_c": {"type": "integer"},
        "sky": {"type": "string", "description": "clear, cloudy, rain or snow"}},
        "required": ["city", "temperature_c"], "additionalProperties": False}),
    # enum Status { PENDING, SHIPPED, DELIVERED }
    # record LineItem(String sku, Integer quantity, Double unitPrice) {}
    # record Customer(String name, String email) {}
    # record PurchaseOrder(String id, Customer customer, List<LineItem> items, Status status, Double total) {}
    ("PurchaseOrder", {"$schema": SPRING_SCHEMA, "type": "object", "properties": {
        "id": {"type": "string"},
        "customer": {"type": "object", "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
                     "additionalProperties": False},
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "sku": {"type": "string"}, "quantity": {"type": "integer"}, "unitPrice": {"type": "number"}},
            "additionalProperties": False}},
        "status": {"type": "string", "enum": ["PENDING", "SHIPPED", "DELIVERED"]},
        "total": {"type": "number"}}, "additionalProperties": False}),
    # record Location(String city, String country) {}
    # record Trip(@JsonProperty(required = true) Location origin, @JsonProperty(required = true) Location destination,
    #             List<String> stops, Integer nights, Boolean refundable) {}
    ("Trip", {"$schema": SPRING_SCHEMA, "$defs": {"Location": {
        "type": "object", "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
        "additionalProperties": False}}, "type": "object", "properties": {
        "origin": {"$ref": "#/$defs/Location"}, "destination": {"$ref": "#/$defs/Location"},
        "stops": {"type": "array", "items": {"type": "string"}}, "nights": {"type": "integer"},
        "refundable": {"type": "boolean"}}, "required": ["origin", "destination"], "additionalProperties": False}),
]


# --- Unenforceable -------------------------------------------------------------------
# Each has one keyword a token grammar cannot express (or only at an absurd size): its
# class names the keyword. The rest of each schema is enforceable.

class TaggedArticle(BaseModel):
    title: Annotated[str, Field(max_length=80)]
    tags: Annotated[set[Annotated[str, Field(max_length=20)]], Field(max_length=5)]


class PalletOrder(BaseModel):
    sku: Sku
    units: Annotated[int, Field(ge=5, le=500, multiple_of=5, description="Sold in packs of 5")]


UNENFORCEABLE = [
    ("TaggedArticle", "pydantic", TaggedArticle.model_json_schema()),
    ("PalletOrder", "pydantic", PalletOrder.model_json_schema()),
    ("postal_code_by_country", "handwritten", {
        "type": "object", "properties": {"country": {"enum": ["US", "NL"]}, "postal_code": {"type": "string",
                                                                                          "maxLength": 10}},
        "required": ["country", "postal_code"],
        "if": {"properties": {"country": {"const": "US"}}},
        "then": {"properties": {"postal_code": {"pattern": "^[0-9]{5}$"}}},
        "else": {"properties": {"postal_code": {"pattern": "^[0-9]{4} ?[A-Z]{2}$"}}}}),
    ("shipping_dependent_schema", "handwritten", {
        "type": "object", "properties": {"express": {"type": "boolean"}, "fee": {"type": "number", "minimum": 0}},
        "required": ["express"], "dependentSchemas": {"express": {"required": ["fee"]}}}),
    ("lottery_ticket", "handwritten", {
        "type": "array", "items": {"type": "integer", "minimum": 2, "maximum": 98, "multipleOf": 2},
        "minItems": 6, "maxItems": 6, "uniqueItems": True}),
]
# Instances for the schemas witness() cannot build one for (it ignores these keywords).
WITNESSES = {"postal_code_by_country": {"country": "US", "postal_code": "12345"},
             "shipping_dependent_schema": {"express": True, "fee": 4.5},
             "lottery_ticket": [2, 4, 6, 8, 10, 12]}
UNENFORCEABLE_KEYWORDS = {"uniqueItems": "uniqueItems", "multipleOf": "multipleOf", "if": "if_then_else",
                          "dependentSchemas": "dependentSchemas"}


# --- Classes -------------------------------------------------------------------------

SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
SUBSCHEMA_ONE = ("items", "additionalProperties", "propertyNames", "contains", "not", "if", "then", "else",
                 "unevaluatedItems", "unevaluatedProperties")
SCALAR_TYPES = {"string", "number", "integer", "boolean", "null"}
BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def walk(schema, parent_key=None):
    """Yields (subschema, the keyword it sits under) for every schema object inside."""
    if not isinstance(schema, dict):
        return
    yield schema, parent_key
    for key in SUBSCHEMA_MAPS:
        for sub in (schema.get(key) or {}).values():
            yield from walk(sub, key)
    for key in SUBSCHEMA_LISTS:
        for sub in schema.get(key) or []:
            yield from walk(sub, key)
    for key in SUBSCHEMA_ONE:
        yield from walk(schema.get(key), key)


def resolve(root, ref):
    node = root
    if ref != "#":
        assert ref.startswith("#/"), ref
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def types_of(schema):
    t = schema.get("type")
    return set(t) if isinstance(t, list) else {t} if t else set()


def is_container(root, schema, seen=()):
    """Whether values of this schema are (or may be) objects or arrays."""
    if not isinstance(schema, dict) or id(schema) in seen:
        return False
    seen = (*seen, id(schema))
    if "$ref" in schema and is_container(root, resolve(root, schema["$ref"]), seen):
        return True
    if types_of(schema) & {"object", "array"} or any(k in schema for k in ("properties", "items", "prefixItems")):
        return True
    return any(is_container(root, s, seen) for k in ("anyOf", "oneOf", "allOf") for s in schema.get(k) or [])


def children(schema):
    """The schemas of an object's or array's members."""
    out = list((schema.get("properties") or {}).values()) + list((schema.get("patternProperties") or {}).values())
    out += list(schema.get("prefixItems") or [])
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            out.append(schema[key])
    return out


def recursive(root):
    """Whether some $ref leads back to a schema it is inside of."""
    def refs(schema):
        return {s["$ref"] for s, _ in walk({k: v for k, v in schema.items() if k not in ("$defs", "definitions")})
                if "$ref" in s}

    def visit(ref, stack):  # stack: the refs followed to get here
        return ref in stack or any(visit(r, stack | {ref}) for r in refs(resolve(root, ref)))
    return visit("#", frozenset())


def is_scalar(root, schema):
    """Whether every value of this schema is a string, number, boolean or null."""
    if "$ref" in schema and not types_of(schema):
        return is_scalar(root, resolve(root, schema["$ref"]))
    alternatives = schema.get("anyOf") or schema.get("oneOf")
    if alternatives and not types_of(schema):
        return all(is_scalar(root, a) for a in alternatives)
    if schema.get("allOf") and not types_of(schema):
        return any(is_scalar(root, part) for part in schema["allOf"])
    values = schema.get("enum", [schema["const"]] if "const" in schema else None)
    if values is not None:
        return all(not isinstance(v, (dict, list)) for v in values)
    return bool(types_of(schema)) and types_of(schema) <= SCALAR_TYPES


def classify(schema):
    classes = set()
    for sub, parent in walk(schema):
        types = types_of(sub)
        if any(b in sub for b in BOUNDS):
            classes.update(f"{t}_bounds" for t in types & {"integer", "number"})
        for key, cls in (("pattern", "pattern"), ("format", "format"), ("minLength", "length"),
                         ("maxLength", "length"), ("allOf", "allOf"), ("anyOf", "anyOf"), ("oneOf", "oneOf"),
                         ("$ref", "ref"), ("prefixItems", "prefixItems"), ("patternProperties", "patternProperties"),
                         ("propertyNames", "propertyNames"), ("minProperties", "min_max_properties"),
                         ("maxProperties", "min_max_properties"), ("dependentRequired", "dependentRequired"),
                         ("minItems", "items_bounds"), ("maxItems", "items_bounds"), ("contains", "contains")):
            if key in sub:
                classes.add(cls)
        for key in ("enum", "const"):
            if key in sub:
                classes.add("not_enum" if parent == "not" else key)
        if isinstance(sub.get("type"), list):
            classes.add("type_list")
        if isinstance(sub.get("additionalProperties"), dict) and sub["additionalProperties"]:
            classes.add("additionalProperties_schema")
        if set(sub.get("properties") or {}) - set(sub.get("required") or []):
            classes.add("optional")
        if is_container(schema, sub) and any(is_container(schema, c) for c in children(sub)):
            classes.add("nested")
        for keyword, cls in UNENFORCEABLE_KEYWORDS.items():
            if keyword in sub:
                classes.add(cls)
    if recursive(schema):
        classes.add("recursive_ref")
    if is_scalar(schema, schema):
        classes.add("top_level_scalar")
    return sorted(classes)


# --- Checks --------------------------------------------------------------------------

FORBIDDEN = {"uniqueItems", "multipleOf", "if", "then", "else", "dependentSchemas", "unevaluatedItems",
             "unevaluatedProperties", "$dynamicRef", "$recursiveRef", "dependencies"}
NO_GRAMMAR = {regex_parser.ASSERT: "look-around", regex_parser.ASSERT_NOT: "look-around",
              regex_parser.GROUPREF: "a back-reference", regex_parser.GROUPREF_EXISTS: "a conditional group"}


def regex_problem(pattern):
    def scan(items):
        for op, arg in items:
            if op in NO_GRAMMAR:
                return NO_GRAMMAR[op]
            for part in arg if isinstance(arg, (list, tuple)) else ():
                if isinstance(part, regex_parser.SubPattern):
                    found = scan(part)
                elif isinstance(part, list) and part and isinstance(part[0], regex_parser.SubPattern):
                    found = next((p for p in map(scan, part) if p), None)
                else:
                    continue
                if found:
                    return found
        return None
    return scan(regex_parser.parse(pattern))


def patterns(schema):
    for sub, _ in walk(schema):
        if isinstance(sub.get("pattern"), str):
            yield sub["pattern"]
        yield from sub.get("patternProperties") or {}


def check(entry, enforceable):
    schema = entry["schema"]
    Draft202012Validator.check_schema(schema)
    for p in patterns(schema):
        problem = regex_problem(p)
        assert problem is None, f"{entry['name']}: the pattern {p!r} uses {problem}"
    used = {k for sub, _ in walk(schema) for k in sub} & FORBIDDEN
    if enforceable:
        assert not used, f"{entry['name']}: uses {sorted(used)}, which no grammar enforces"
    else:
        assert used, f"{entry['name']}: has no unenforceable keyword"
    try:
        instance = WITNESSES[entry["name"]] if entry["name"] in WITNESSES else witness(schema)
    except ValueError as e:
        raise AssertionError(f"{entry['name']}: {e}") from None
    error = validation_error(instance, schema)
    assert error is None, f"{entry['name']}: the instance built for it, {json.dumps(instance)}, fails: {error}"


# --- Instances -----------------------------------------------------------------------
# A small builder of one valid instance per schema, enough for this corpus: candidates
# for each type are tried in turn against the (sub)schema until one validates.

FORMAT_EXAMPLES = {"date": "2024-03-15", "time": "09:30:00Z", "date-time": "2024-03-15T09:30:00Z",
                   "duration": "PT1H30M", "uuid": "123e4567-e89b-12d3-a456-426614174000",
                   "email": "ada@example.com", "ipv4": "192.0.2.1", "ipv6": "2001:db8::1",
                   "hostname": "example.com", "uri": "https://example.com/"}
PRINTABLE = [chr(c) for c in range(0x20, 0x7f)]


class TooDeep(Exception):
    pass


def regex_samples(pattern, rng, count=60):
    """Strings that match `pattern` (first the shortest choices, then random ones)."""
    def gen(items, shortest):
        out = []
        for op, arg in items:
            if op == regex_parser.LITERAL:
                out.append(chr(arg))
            elif op == regex_parser.NOT_LITERAL:
                out.append("a" if chr(arg) != "a" else "b")
            elif op == regex_parser.ANY:
                out.append("x")
            elif op == regex_parser.IN:
                out.append(char_in(arg, shortest))
            elif op == regex_parser.CATEGORY:
                out.append(char_in([(op, arg)], shortest))
            elif op in (regex_parser.MAX_REPEAT, regex_parser.MIN_REPEAT):
                low, high, sub = arg
                high = min(high, low + 8)
                n = low if shortest else rng.randint(low, high)
                out.extend(gen(sub, shortest) for _ in range(n))
            elif op == regex_parser.SUBPATTERN:
                out.append(gen(arg[-1], shortest))
            elif op == regex_parser.BRANCH:
                out.append(gen(arg[1][0] if shortest else rng.choice(arg[1]), shortest))
            elif op == regex_parser.AT:
                pass
            else:
                raise ValueError(f"no sample for {op} in {pattern!r}")
        return "".join(out)

    def char_in(items, shortest):
        allowed, negate = set(), False
        for op, arg in items:
            if op == regex_parser.NEGATE:
                negate = True
            elif op == regex_parser.LITERAL:
                allowed.add(chr(arg))
            elif op == regex_parser.RANGE:
                allowed.update(chr(c) for c in range(arg[0], min(arg[1], 0x7e) + 1))
            elif op == regex_parser.CATEGORY:
                allowed.update(c for c in PRINTABLE if re.fullmatch(CATEGORIES[arg], c))
        choices = sorted(set(PRINTABLE) - allowed if negate else allowed)
        return choices[0] if shortest else rng.choice(choices)

    parsed = regex_parser.parse(pattern)
    yield gen(parsed, True)
    for _ in range(count):
        yield gen(parsed, False)


CATEGORIES = {regex_parser.CATEGORY_DIGIT: r"\d", regex_parser.CATEGORY_NOT_DIGIT: r"\D",
              regex_parser.CATEGORY_SPACE: r"\s", regex_parser.CATEGORY_NOT_SPACE: r"\S",
              regex_parser.CATEGORY_WORD: r"\w", regex_parser.CATEGORY_NOT_WORD: r"\W"}


def merged(root, parts):
    """One schema holding all of `parts`, their $ref and allOf resolved: properties and
    required are combined, any other keyword is the last part's."""
    out = {}
    for part in parts:
        part = dict(part)
        while "$ref" in part:
            part = {**resolve(root, part.pop("$ref")), **part}
        if "allOf" in part:
            part = merged(root, [*part.pop("allOf"), part])
        properties = dict(out.get("properties", {}))
        for name, sub in part.get("properties", {}).items():
            properties[name] = merged(root, [properties[name], sub]) if name in properties else sub
        required = out.get("required", []) + [r for r in part.get("required", []) if r not in out.get("required", [])]
        out.update(part)
        if properties:
            out["properties"] = properties
        if required:
            out["required"] = required
    return out


def witness(root):
    rng = random.Random(0)
    root_validator = validator(root)

    def valid(instance, schema):
        # evolve() keeps the root's resolver, so the $refs inside `schema` still resolve.
        return root_validator.evolve(schema=schema).is_valid(instance)

    def build(schema, depth):
        if depth > 12:
            raise TooDeep
        if schema is True or schema == {}:
            return None
        schema = merged(root, [schema]) if ("$ref" in schema or "allOf" in schema) else schema
        for key in ("anyOf", "oneOf"):
            if key in schema:
                rest = {k: v for k, v in schema.items() if k != key}
                for alternative in schema[key]:
                    try:
                        candidate = build(merged(root, [rest, alternative]), depth + 1)
                    except TooDeep:
                        continue
                    if valid(candidate, schema):
                        return candidate
                raise ValueError(f"no alternative of {json.dumps(schema)[:200]} admits an instance")
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return next(v for v in schema["enum"] if valid(v, schema))
        types = schema.get("type", [])
        types = types if isinstance(types, list) else [types]
        if not types:
            types = (["object"] if "properties" in schema or "additionalProperties" in schema else
                     ["array"] if "items" in schema or "prefixItems" in schema else ["null"])
        for t in types:
            for candidate in candidates(schema, t, depth):
                if valid(candidate, schema):
                    return candidate
        raise ValueError(f"no instance found for {json.dumps(schema)[:200]}")

    def candidates(schema, t, depth):
        if t == "null":
            yield None
        elif t == "boolean":
            yield True
        elif t in ("integer", "number"):
            yield from numbers(schema, t == "integer")
        elif t == "string":
            yield from strings(schema)
        elif t == "array":
            yield array(schema, depth)
        elif t == "object":
            yield obj_instance(schema, depth)

    def numbers(schema, integer):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        step = schema.get("multipleOf", 1)
        guesses = [0, 1, -1]
        if low is not None:
            guesses += [low, low + 1, low + 0.5]
        if high is not None:
            guesses += [high, high - 1, high - 0.5]
        if low is not None and high is not None:
            guesses.append((low + high) / 2)
        for g in guesses:
            value = (g // step + 1) * step if integer else g
            for v in ((int(value), int(g)) if integer else (g,)):
                yield v

    def strings(schema):
        low, high = schema.get("minLength", 0), schema.get("maxLength", 10**6)
        if "format" in schema:
            yield FORMAT_EXAMPLES.get(schema["format"], "x")
        if "pattern" in schema:
            for s in regex_samples(schema["pattern"], rng):
                yield s
                if low <= len(s) <= high:
                    continue
                yield (s + "x" * low)[:max(low, len(s))]
        for n in (max(low, 3), low, min(high, 8)):
            for c in "abz":
                yield c * n

    def array(schema, depth):
        out = [build(s, depth + 1) for s in schema.get("prefixItems", [])]
        items = schema.get("items", {})
        if "contains" in schema:
            count = schema.get("minContains", 1)
            member = merged(root, [items, schema["contains"]]) if isinstance(items, dict) else schema["contains"]
            out += [build(member, depth + 1) for _ in range(count)]
        while len(out) < schema.get("minItems", 0):
            out.append(build(items if isinstance(items, dict) else {}, depth + 1))
        return out

    def obj_instance(schema, depth):
        props = schema.get("properties", {})
        names = list(schema.get("required", []))
        for name, needs in schema.get("dependentRequired", {}).items():
            if name in names:
                names += [n for n in needs if n not in names]
        extra = schema.get("additionalProperties", True)
        spare = [n for n in props if n not in names]
        for pattern in schema.get("patternProperties", {}):
            spare += [next(regex_samples(pattern, rng))]
        if extra is not False:
            names_schema = schema.get("propertyNames", {})
            if "pattern" in names_schema:
                spare += [s for s in regex_samples(names_schema["pattern"], rng, 20)
                          if valid(s, {"type": "string", **names_schema})][:10]
            else:
                spare += [f"key{i}" for i in range(10)]
        while len(names) < schema.get("minProperties", 0):
            name = spare.pop(0)
            if name not in names:
                names.append(name)
                for dep in schema.get("dependentRequired", {}).get(name, []):
                    if dep not in names:
                        names.append(dep)
        out = {}
        for name in names:
            if name in props:
                sub = props[name]
            else:
                sub = next((s for p, s in schema.get("patternProperties", {}).items() if re.search(p, name)),
                           extra if isinstance(extra, dict) else {})
            out[name] = build(sub, depth + 1)
        return out

    return build(root, 0)


# --- Output --------------------------------------------------------------------------

def entries():
    corpus = [{"name": n, "source": "pydantic", "schema": s} for n, s in pydantic_schemas()]
    corpus += [{"name": n, "source": "openai_tool", "schema": s} for n, s in openai_tool_schemas()]
    corpus += [{"name": n, "source": "handwritten", "schema": s} for n, s in HANDWRITTEN]
    corpus += [{"name": n, "source": "spring_ai", "schema": s} for n, s in SPRING_AI]
    unenforceable = [{"name": n, "source": src, "schema": s} for n, src, s in UNENFORCEABLE]
    for entry in corpus + unenforceable:
        entry["classes"] = classify(entry["schema"])
    return corpus, unenforceable


def write(path, rows):
    order = ("name", "source", "classes", "schema")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({k: row[k] for k in order}) + "\n" for row in rows))


def main():
    corpus, unenforceable = entries()
    names = [e["name"] for e in corpus + unenforceable]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    assert not duplicates, f"names used twice: {duplicates}"
    for entry in corpus:
        check(entry, enforceable=True)
    for entry in unenforceable:
        check(entry, enforceable=False)
    write(OUT, corpus)
    write(OUT_UNENFORCEABLE, unenforceable)

    by_source, by_class = {}, {}
    for entry in corpus:
        by_source[entry["source"]] = by_source.get(entry["source"], 0) + 1
        for cls in entry["classes"]:
            by_class[cls] = by_class.get(cls, 0) + 1
    print(f"{OUT.relative_to(ROOT)}: {len(corpus)} schemas (pydantic {pydantic.VERSION}, openai {openai.__version__})")
    print("  by source: " + ", ".join(f"{k} {v}" for k, v in sorted(by_source.items())))
    print("  by class:  " + ", ".join(f"{k} {v}" for k, v in sorted(by_class.items())))
    print(f"{OUT_UNENFORCEABLE.relative_to(ROOT)}: {len(unenforceable)} schemas: "
          + ", ".join(f"{e['name']} ({', '.join(c for c in e['classes'] if c in UNENFORCEABLE_KEYWORDS.values())})"
                      for e in unenforceable))


if __name__ == "__main__":
    main()
